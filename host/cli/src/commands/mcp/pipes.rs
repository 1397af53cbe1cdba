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
    let pipe = |file| tokio::net::unix::pipe::Receiver::from_file(file).map(|r| Box::pin(r) as Input);
    registered(std::io::stdin().as_fd(), "stdin", pipe, |s| Box::pin(s) as Input)
        .unwrap_or_else(|| Box::pin(tokio::io::stdin()))
}

/// stdout, non-blocking when it is a pipe or a socket.
pub fn output() -> Output {
    let pipe = |file| tokio::net::unix::pipe::Sender::from_file(file).map(|s| Box::pin(s) as Output);
    registered(std::io::stdout().as_fd(), "stdout", pipe, |s| Box::pin(s) as Output)
        .unwrap_or_else(|| Box::pin(tokio::io::stdout()))
}

/// `fd` registered with the executor through `pipe` (a FIFO) or `socket`; `None` (the blocking
/// pool, then) for anything else or when registering fails.
fn registered<T>(
    fd: BorrowedFd<'_>,
    what: &str,
    pipe: impl FnOnce(std::fs::File) -> std::io::Result<T>,
    socket_stream: impl FnOnce(tokio::net::UnixStream) -> T,
) -> Option<T> {
    let stream = match duplicate(fd) {
        Ok(Some((FileType::Fifo, fd))) => pipe(fd.into()),
        Ok(Some((_, fd))) => socket(fd).map(socket_stream),
        Ok(None) => return None,
        Err(e) => Err(e),
    };
    stream.inspect_err(|e| tracing::debug!("{what} through the blocking pool: {e}")).ok()
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
