//! Runnable examples of embedding toolhost live beside this file.
