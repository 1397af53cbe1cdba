//! Capped capture of a guest's stdout and stderr.
//!
//! A tool's output streams never reach the host's terminal: they are kept in memory, at most
//! `cap` bytes each, for error messages (a Rust panic message is printed to stderr). Unlike
//! wasmtime's `MemoryOutputPipe`, a full pipe does not trap the guest: it keeps the **last**
//! `cap` bytes, because the end of stderr is where a panic message is, and it counts what was
//! dropped so the result can say so.

use bytes::Bytes;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};

#[derive(Debug, Default)]
struct Inner {
    buf: std::collections::VecDeque<u8>,
    dropped: u64,
}

/// A capped, tail-keeping output pipe. Cloning shares the buffer.
#[derive(Debug, Clone)]
pub(crate) struct CapturePipe {
    cap: usize,
    inner: Arc<Mutex<Inner>>,
}

impl CapturePipe {
    pub(crate) fn new(cap: usize) -> Self {
        CapturePipe { cap, inner: Arc::default() }
    }

    fn push(&self, bytes: &[u8]) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let skip = bytes.len().saturating_sub(self.cap);
        inner.dropped += skip as u64;
        inner.buf.extend(&bytes[skip..]);
        let over = inner.buf.len().saturating_sub(self.cap);
        if over > 0 {
            inner.buf.drain(..over);
            inner.dropped += over as u64;
        }
    }

    /// Forget everything written so far (a reused instance starts a new call).
    pub(crate) fn clear(&self) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.buf.clear();
        inner.dropped = 0;
    }

    /// The kept text (lossy UTF-8) and how many earlier bytes were dropped.
    pub(crate) fn contents(&self) -> (String, u64) {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (a, b) = inner.buf.as_slices();
        let mut v = Vec::with_capacity(a.len() + b.len());
        v.extend_from_slice(a);
        v.extend_from_slice(b);
        (String::from_utf8_lossy(&v).into_owned(), inner.dropped)
    }
}

#[async_trait::async_trait]
impl Pollable for CapturePipe {
    async fn ready(&mut self) {}
}

impl OutputStream for CapturePipe {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        self.push(&bytes);
        Ok(())
    }
    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }
    fn check_write(&mut self) -> Result<usize, StreamError> {
        // Always writable: excess is dropped from the front, never refused.
        Ok(64 * 1024)
    }
}

impl tokio::io::AsyncWrite for CapturePipe {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl IsTerminal for CapturePipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CapturePipe {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_tail() {
        let p = CapturePipe::new(4);
        p.push(b"ab");
        p.push(b"cdef");
        assert_eq!(p.contents(), ("cdef".to_string(), 2));
        p.push(b"0123456789");
        assert_eq!(p.contents(), ("6789".to_string(), 12));
    }
}
