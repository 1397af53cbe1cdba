//! The process's stdin and stdout as non-blocking streams when they are pipes or sockets (what
//! an MCP client starts a server with), so that every line read or written is a readiness
//! event on the executor instead of a hand-off to tokio's blocking pool and back: thread
//! switches saved on every read and every write, a good part of a round trip that otherwise
//! costs many times the call it carries. Anything else (a file, a terminal) keeps tokio's
//! blocking-pool `stdin` and `stdout`.
//!
//! The descriptors are duplicated and the duplicates made non-blocking; that flag belongs to
//! the open pipe, so a blocking write to stdout elsewhere in the process could fail with
//! `WouldBlock`: in `toolhost mcp` nothing but the transport writes to stdout.

use rustix::fs::FileType;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::pin::Pin;
use tokio::io::{AsyncRead, AsyncWrite};

/// The process's input.
pub type Input = Pin<Box<dyn AsyncRead + Send>>;
/// The process's output.
pub type Output = Pin<Box<dyn AsyncWrite + Send>>;

/// stdin, non-blocking when it is a pipe or a socket.
pub fn input() -> Input {
    let stdin = std::io::stdin();
    let registered = match duplicate(stdin.as_fd()) {
        Ok(Some((FileType::Fifo, fd))) => {
            tokio::net::unix::pipe::Receiver::from_file(fd.into()).map(|r| Box::pin(r) as Input)
        }
        Ok(Some((_, fd))) => socket(fd).map(|s| Box::pin(s) as Input),
        Ok(None) => return Box::pin(tokio::io::stdin()),
        Err(e) => Err(e),
    };
    registered.unwrap_or_else(|e| {
        tracing::debug!("reading stdin through the blocking pool: {e}");
        Box::pin(tokio::io::stdin())
    })
}

/// stdout, non-blocking when it is a pipe or a socket.
pub fn output() -> Output {
    let stdout = std::io::stdout();
    let registered = match duplicate(stdout.as_fd()) {
        Ok(Some((FileType::Fifo, fd))) => {
            tokio::net::unix::pipe::Sender::from_file(fd.into()).map(|s| Box::pin(s) as Output)
        }
        Ok(Some((_, fd))) => socket(fd).map(|s| Box::pin(s) as Output),
        Ok(None) => return Box::pin(tokio::io::stdout()),
        Err(e) => Err(e),
    };
    registered.unwrap_or_else(|e| {
        tracing::debug!("writing stdout through the blocking pool: {e}");
        Box::pin(tokio::io::stdout())
    })
}

/// A duplicate of `fd` with its type, when it is a pipe or a socket.
fn duplicate(fd: BorrowedFd<'_>) -> std::io::Result<Option<(FileType, OwnedFd)>> {
    let kind = FileType::from_raw_mode(rustix::fs::fstat(fd)?.st_mode);
    if !matches!(kind, FileType::Fifo | FileType::Socket) {
        return Ok(None);
    }
    Ok(Some((kind, rustix::io::fcntl_dupfd_cloexec(fd, 3)?)))
}

/// A socket, registered with the executor (reads and writes work on any stream socket).
fn socket(fd: OwnedFd) -> std::io::Result<tokio::net::UnixStream> {
    let socket = std::os::unix::net::UnixStream::from(fd);
    socket.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(socket)
}
