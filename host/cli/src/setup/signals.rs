//! Ctrl-C and SIGTERM: a token every running call watches.

/// A token cancelled by the first Ctrl-C (SIGINT) or SIGTERM: running calls are interrupted,
/// queued ones never start, and the command still prints every call's result.
pub fn cancel_on_signal() -> tokio_util::sync::CancellationToken {
    let token = tokio_util::sync::CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        {
            let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    t.cancel();
                    return;
                }
            };
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
        }
        #[cfg(not(unix))]
        let _ = ctrl_c.await;
        eprintln!("interrupted: stopping the running calls");
        t.cancel();
    });
    token
}
