//! What a network call costs through the sandbox: a `wasi:http` GET of a small loopback page
//! by a test guest and by `WebFetch` (whole pipeline: schema, validate, a fresh Store, the
//! grant check, the host's own connection), next to the same GET made natively over a
//! `TcpStream` as the reference for the network round trip itself.
//!
//! `cargo bench -p toolhost-tests --bench network`

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::io::{Read, Write};
use std::time::Duration;
use toolhost::policy::Config;
use toolhost::{Runtime, Session, ToolSource, ToolUse};
use toolhost_tests::server::{Server, ok_response};

const PAGE: &str = "<html><body><h1>Benchmark</h1><p>A small page with <b>some</b> markup.</p></body></html>";

fn network(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let server = Server::start(true, |_| ok_response("text/html", PAGE));
    let port = server.port;
    let toml = format!(
        "[tools.Net]\ngrant = {{ net = [\"127.0.0.1:{port}\"] }}\n[tools.WebFetch]\ngrant = {{ net = [\"127.0.0.1:{port}\"] }}\n"
    );
    let config = Config::parse(&toml, std::path::Path::new("bench.toml")).expect("config");
    let mut runtime = Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(toolhost_tests::engine())
        .workspace(ws.path())
        .config(config)
        .build()
        .expect("runtime");
    let mut sources = toolhost_tests::default_tools();
    sources.push(ToolSource::bytes("net.wasm", toolhost_tests::guests::NET));
    for s in sources {
        rt.block_on(runtime.load(s)).expect("load");
    }
    let url = format!("http://127.0.0.1:{port}/");
    let session = Session::new();
    let guest = ToolUse::new("toolu_net", "Net", json!({"op": "wasi_http", "url": url}));
    let fetch = ToolUse::new("toolu_fetch", "WebFetch", json!({"url": url}));
    for call in [&guest, &fetch] {
        let first = rt.block_on(runtime.call(&session, call, toolhost::CallOptions::new()));
        assert!(!first.is_error, "{}", first.text());
    }

    let mut group = c.benchmark_group("http_get");
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("native_tcp", |b| {
        b.iter(|| {
            let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
            conn.write_all(b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").expect("send");
            let mut response = Vec::new();
            conn.read_to_end(&mut response).expect("read");
            assert!(response.ends_with(PAGE.as_bytes()));
        })
    });
    group.bench_function("guest_wasi_http", |b| {
        b.iter(|| rt.block_on(runtime.call(&session, &guest, toolhost::CallOptions::new())))
    });
    group.bench_function("webfetch", |b| {
        b.iter(|| rt.block_on(runtime.call(&session, &fetch, toolhost::CallOptions::new())))
    });
    group.finish();
}

criterion_group!(benches, network);
criterion_main!(benches);
