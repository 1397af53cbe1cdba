//! Reaching what a tool is installed from, through the `toolhost` binary: `https://` sources
//! (a certificate `[tls] ca_files` trusts, or a refusal), registries that ask for credentials
//! (docker config logins, a clear error without or with wrong ones), a private registry over
//! TLS on this machine's network address, and a widening accepted or refused on a terminal.

use std::collections::HashMap;
use std::path::Path;
use std::process::Output;
use toolhost_tests::cli::{self, fails, ok, run_on_a_terminal};
use toolhost_tests::guests;
use toolhost_tests::registry::{HTPASSWD, Options, PASSWORD, Registry};
use toolhost_tests::server::TestCa;

/// `toolhost ARGS…` in `ws` (not `--locked`: CI sets CI=true), with the docker config of
/// `docker` (a directory) if given.
fn th(ws: &Path, docker: Option<&Path>, args: &[&str]) -> Output {
    let mut c = cli::command(ws);
    c.env_remove("CI").args(args).stdin(std::process::Stdio::null());
    if let Some(dir) = docker {
        c.env("DOCKER_CONFIG", dir);
    }
    c.output().expect("run toolhost")
}

fn lock(ws: &Path) -> String {
    std::fs::read_to_string(ws.join("toolhost.lock")).unwrap_or_default()
}

/// A docker config directory whose `config.json` logs `user:password` in to `registry`, as
/// `docker login` writes it (base64 of `user:password` under `auths`).
fn docker_login(registry: &str, user: &str, password: &str) -> tempfile::TempDir {
    use base64::Engine as _;
    let dir = tempfile::tempdir().unwrap();
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    let json = serde_json::json!({ "auths": { registry: { "auth": auth } } });
    std::fs::write(dir.path().join("config.json"), json.to_string()).unwrap();
    dir
}

#[test]
fn an_https_source_needs_a_trusted_certificate_then_installs_signed() {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    std::fs::write(ws.join("noop.wasm"), guests::NOOP).unwrap();
    let public = ok(&th(ws, None, &["keygen", "acme.key"])).trim().to_string();
    let out = ok(&th(ws, None, &["publish", "noop.wasm", "--sign", "acme.key"]));
    assert!(out.contains("noop.wasm.sig"), "{out}");
    let sig = std::fs::read(ws.join("noop.wasm.sig")).unwrap();

    let ca = TestCa::new();
    let files =
        HashMap::from([("tools/noop.wasm".to_string(), guests::NOOP.to_vec()), ("tools/noop.wasm.sig".into(), sig)]);
    let server = ca.https_files(files);
    let url = format!("https://127.0.0.1:{}/tools/noop.wasm", server.port);

    // A certificate no root vouches for: refused, nothing written.
    let all = fails(&th(ws, None, &["add", &url]), "certificate");
    assert!(all.contains(&url) && all.contains("UnknownIssuer"), "{all}");
    assert!(!ws.join("toolhost.toml").exists() && !ws.join("toolhost.lock").exists());

    // The CA in `[tls] ca_files` (relative to the config file), a signer trusted for the URL.
    std::fs::write(ws.join("ca.pem"), &ca.ca_pem).unwrap();
    let config = format!(
        "[tls]\nca_files = [\"ca.pem\"]\n\n[signatures]\nrequire = true\n\n[signatures.signers.acme]\nkey = \"{public}\"\nsources = [\"https://127.0.0.1:{}/tools/\"]\n",
        server.port
    );
    std::fs::write(ws.join("toolhost.toml"), &config).unwrap();
    let out = ok(&th(ws, None, &["add", &url]));
    assert!(out.contains("name:        Noop") && out.contains(&format!("signer:      acme ({public})")), "{out}");
    let l = lock(ws);
    assert!(l.contains(&format!("source = \"{url}\"")) && l.contains(&format!("signer = \"{public}\"")), "{l}");
    let out = ok(&th(ws, None, &["--no-default-tools", "call", "Noop", r#"{"text":"over https"}"#]));
    assert!(out.contains("over https"), "{out}");

    // A URL that is not there, and one that is not HTTPS.
    let missing = format!("https://127.0.0.1:{}/tools/missing.wasm", server.port);
    fails(&th(ws, None, &["add", &missing, "--name", "Missing"]), "not found (404)");
    fails(&th(ws, None, &["add", &format!("http://127.0.0.1:{}/tools/noop.wasm", server.port)]), "http");
    assert_eq!(
        std::fs::read_to_string(ws.join("toolhost.toml")).unwrap(),
        format!("{config}\n[tools.Noop]\nsource = \"{url}\"\n")
    );
}

#[test]
fn a_registry_that_asks_for_credentials_gets_the_docker_login_for_it() {
    let options = Options { htpasswd: Some(HTPASSWD.to_string()), ..Options::default() };
    let Some(registry) = Registry::start_with(options) else { return };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    std::fs::write(ws.join("noop.wasm"), guests::NOOP).unwrap();
    let tag = format!("{}:1", registry.reference("private/noop"));

    // No login: refused, and the message says how to log in.
    let all = fails(&th(ws, None, &["publish", "noop.wasm", &tag]), "the registry refused access");
    assert!(all.contains(&format!("no credentials are configured for {}", registry.addr)), "{all}");
    assert!(all.contains(&format!("docker login {}", registry.addr)), "{all}");

    // A wrong password: refused, and said to be refused.
    let wrong = docker_login(&registry.addr, "alice", "guess");
    let all = fails(&th(ws, Some(wrong.path()), &["publish", "noop.wasm", &tag]), "the registry refused access");
    assert!(all.contains("were refused"), "{all}");

    // Logged in to another registry only: still anonymous here.
    let elsewhere = docker_login("registry.example:5000", "alice", PASSWORD);
    fails(&th(ws, Some(elsewhere.path()), &["publish", "noop.wasm", &tag]), "no credentials are configured");

    // The right login: publish, add (pull) and call.
    let login = docker_login(&registry.addr, "alice", PASSWORD);
    ok(&th(ws, Some(login.path()), &["publish", "noop.wasm", &tag]));
    fails(&th(ws, None, &["add", &tag]), "no credentials are configured");
    assert!(!ws.join("toolhost.lock").exists());
    let out = ok(&th(ws, Some(login.path()), &["add", &tag]));
    assert!(out.contains("name:        Noop"), "{out}");
    // A start reads the lock and the store: no registry, no credentials.
    let out = ok(&th(ws, None, &["--no-default-tools", "call", "Noop", r#"{"text":"private"}"#]));
    assert!(out.contains("private"), "{out}");

    // A docker config that is not one: an error naming it, never a silent anonymous try.
    let broken = tempfile::tempdir().unwrap();
    std::fs::write(broken.path().join("config.json"), "{ not json").unwrap();
    let all = fails(&th(ws, Some(broken.path()), &["update", "Noop"]), "not a docker config file");
    assert!(all.contains(&format!("credentials for {}", registry.addr)), "{all}");
}

/// This machine's address on its network (not loopback), if it has one: what a registry
/// elsewhere looks like to the client (HTTPS required).
fn own_address() -> Option<String> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    // Connecting a UDP socket sends nothing; it picks the interface a packet would leave by.
    socket.connect("203.0.113.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then(|| ip.to_string())
}

#[test]
fn a_private_registry_over_tls_with_an_internal_ca_and_a_login() {
    let Some(host) = own_address() else {
        toolhost_tests::skip("this machine has no network address besides loopback");
        return;
    };
    let ca = TestCa::for_names(&[&host]);
    let options = Options {
        host: Some(host.clone()),
        tls: Some((ca.cert_pem.clone(), ca.key_pem.clone())),
        htpasswd: Some(HTPASSWD.to_string()),
    };
    let Some(registry) = Registry::start_with(options) else { return };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    std::fs::write(ws.join("noop.wasm"), guests::NOOP).unwrap();
    let login = docker_login(&registry.addr, "alice", PASSWORD);
    let tag = format!("{}:1", registry.reference("team/noop"));

    // Not loopback, so HTTPS only, and the internal CA is not trusted yet.
    let all = fails(&th(ws, Some(login.path()), &["publish", "noop.wasm", &tag]), "UnknownIssuer");
    assert!(all.contains(&tag), "{all}");

    std::fs::write(ws.join("ca.pem"), &ca.ca_pem).unwrap();
    std::fs::write(ws.join("toolhost.toml"), "[tls]\nca_files = [\"ca.pem\"]\n").unwrap();
    ok(&th(ws, Some(login.path()), &["--config", "toolhost.toml", "publish", "noop.wasm", &tag]));
    let out = ok(&th(ws, Some(login.path()), &["add", &tag]));
    assert!(out.contains("name:        Noop") && out.contains(&format!("Fetched {tag}@sha256:")), "{out}");
    let out = ok(&th(ws, None, &["--no-default-tools", "call", "Noop", r#"{"text":"over tls"}"#]));
    assert!(out.contains("over tls"), "{out}");
    ok(&th(ws, Some(login.path()), &["update", "--locked"]));
}

#[test]
fn a_widening_is_asked_on_a_terminal_and_applied_only_on_yes() {
    let Some(registry) = Registry::start() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    std::fs::write(ws.join("noop.wasm"), guests::NOOP).unwrap();
    std::fs::write(ws.join("probe.wasm"), guests::PROBE).unwrap();
    let tag = format!("{}:stable", registry.reference("tools/thing"));
    ok(&th(ws, None, &["publish", "noop.wasm", &tag]));
    ok(&th(ws, None, &["add", &tag, "--name", "Thing"]));
    let first = lock(ws);
    // The tag moves to a component that may write anywhere and read every variable.
    ok(&th(ws, None, &["publish", "probe.wasm", &tag]));
    let no_ci = |c: &mut std::process::Command| {
        c.env_remove("CI");
    };

    let (code, screen) = run_on_a_terminal(ws, no_ci, &["update", "Thing"], "n\n");
    assert_eq!(code, 2, "{screen}");
    assert!(
        screen.contains("ceiling: + fs-write(/)") && screen.contains("Accept the wider capabilities of Thing? [y/N]"),
        "{screen}"
    );
    assert!(screen.contains("toolhost update Thing --accept-capabilities"), "{screen}");
    assert_eq!(lock(ws), first, "no: nothing changes");

    // Anything but a yes is a no.
    let (code, screen) = run_on_a_terminal(ws, no_ci, &["update", "Thing"], "sure\n");
    assert_eq!(code, 2, "{screen}");
    assert_eq!(lock(ws), first);

    let (code, screen) = run_on_a_terminal(ws, no_ci, &["update", "Thing"], "y\n");
    assert_eq!(code, 0, "{screen}");
    assert!(screen.contains("Thing: updated"), "{screen}");
    assert!(lock(ws).contains("\"fs-write(/)\""), "{}", lock(ws));
}

/// `add` never puts a tool in an embedded tool's place unasked: rules and hooks that name `Read`
/// would apply to it (a config allowing `Read` would let it write). With `--replace` it does,
/// showing both tools' capabilities.
#[test]
fn add_never_replaces_an_embedded_tool_unasked() {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    std::fs::write(ws.join("hostile.wasm"), guests::HOSTILE).unwrap();
    std::fs::write(ws.join("toolhost.toml"), "[permissions]\nallow = [\"Read\"]\n").unwrap();
    for name in ["Read", "Write", "WebFetch"] {
        let all = fails(
            &th(ws, None, &["add", "hostile.wasm", "--name", name]),
            &format!("{name} (the name given) is an embedded default tool"),
        );
        assert!(all.contains("--replace"), "{all}");
    }
    assert!(!std::fs::read_to_string(ws.join("toolhost.toml")).unwrap().contains("[tools."));
    assert_eq!(lock(ws), "", "nothing locked");

    let out = ok(&th(ws, None, &["add", "hostile.wasm", "--name", "Read", "--replace"]));
    assert!(out.contains("Replacing the embedded tool Read; its capabilities against this one's:"), "{out}");
    assert!(out.contains("ceiling: + "), "the wider ceiling is shown: {out}");
    assert!(out.contains("(wider: needs your yes)"), "{out}");
    assert!(std::fs::read_to_string(ws.join("toolhost.toml")).unwrap().contains("[tools.Read]"));
    // Another name needs nothing more.
    ok(&th(ws, None, &["add", "hostile.wasm", "--name", "Mine"]));
}

/// A hostile registry on loopback: the manifest declares a layer of 1,000 bytes and the layer
/// streams 1 GiB; another manifest is 600 MB; a tag list is 600 MB. Each is cut off as it
/// streams, a little past its limit, with a clear error (issue 30: `add` reached 1.26 GB
/// resident before the digest check).
#[test]
fn a_registry_that_streams_more_than_it_declares_is_cut_off() {
    use std::io::Write as _;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    const GIB: usize = 1 << 30;
    let served = Arc::new(AtomicUsize::new(0));
    let counted = served.clone();
    let layer_digest = format!("sha256:{}", "ab".repeat(32));
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.wasm.config.v0+json", "digest": format!("sha256:{}", "cd".repeat(32)), "size": 2},
        "layers": [{"mediaType": "application/wasm", "digest": layer_digest, "size": 1000}],
    })
    .to_string();
    let server = toolhost_tests::server::Server::serve(move |mut conn| {
        let head = toolhost_tests::server::read_head(&mut conn);
        let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
        let endless = |conn: &mut std::net::TcpStream, total: usize, content_type: &str| {
            let _ = write!(conn, "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nConnection: close\r\n\r\n");
            let chunk = vec![b' '; 64 << 10];
            let mut sent = 0;
            while sent < total {
                if conn.write_all(&chunk).is_err() {
                    break;
                }
                sent += chunk.len();
                counted.fetch_add(chunk.len(), Ordering::SeqCst);
            }
        };
        match path.as_str() {
            "/v2/" => {
                let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}");
            }
            p if p.ends_with("/manifests/small") => {
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{manifest}",
                    manifest.len()
                );
            }
            p if p.contains("/blobs/") => endless(&mut conn, GIB, "application/octet-stream"),
            p if p.contains("/manifests/") => {
                endless(&mut conn, 600 << 20, "application/vnd.oci.image.manifest.v1+json")
            }
            p if p.ends_with("/tags/list") => endless(&mut conn, 600 << 20, "application/json"),
            _ => {
                let _ = conn.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            }
        }
    });
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    let registry = format!("127.0.0.1:{}", server.port);
    let cases = [
        (
            vec!["add".to_string(), format!("oci://{registry}/evil/tool:small")],
            "more than the 1000 bytes the manifest declares",
        ),
        (vec!["add".to_string(), format!("oci://{registry}/evil/tool:huge")], "the manifest is over 1 MiB"),
        (
            vec!["add".to_string(), format!("oci://{registry}/evil/tool"), "--version".into(), "^1".into()],
            "cannot list the tags: the registry sent more than",
        ),
    ];
    for (args, want) in cases {
        served.store(0, Ordering::SeqCst);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let all = fails(&th(ws, None, &args), want);
        assert!(!all.contains("panicked"), "{all}");
        // Give the server's writer a moment to see the closed connection.
        std::thread::sleep(std::time::Duration::from_millis(200));
        let sent = served.load(Ordering::SeqCst);
        assert!(sent < 64 << 20, "{args:?}: the registry got {sent} bytes out before it was cut off");
    }
    assert_eq!(lock(ws), "", "nothing locked");
}

/// An installed tool's powers are tied to its lock: at every load, what the component declares
/// (its ceiling, its read-only flag) must be what was locked. `schema` is the component's own
/// code; here the lock is made to disagree with it, as a component whose answer depends on the
/// machine or the day would.
#[test]
fn a_tool_that_declares_other_powers_than_locked_is_not_loaded() {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    std::fs::write(ws.join("probe.wasm"), guests::PROBE).unwrap();
    ok(&th(ws, None, &["add", "probe.wasm", "--name", "P"]));
    let lock_text = lock(ws);
    assert!(lock_text.contains("read_only = false"), "{lock_text}");
    ok(&th(ws, None, &["--no-default-tools", "list"]));

    // Locked with a narrower ceiling than it declares now.
    let ceiling = lock_text.lines().find(|l| l.starts_with("ceiling = ")).unwrap();
    std::fs::write(ws.join("toolhost.lock"), lock_text.replace(ceiling, "ceiling = [\"fs-read(.)\"]")).unwrap();
    let o = th(ws, None, &["--no-default-tools", "call", "P", r#"{"op":"env","name":"HOME"}"#]);
    assert_ne!(o.status.code(), Some(0));
    let all = format!("{}{}", cli::stdout(&o), cli::stderr(&o));
    assert!(all.contains("now declares ceiling ["), "{all}");
    assert!(all.contains("locked [fs-read(.)]"), "{all}");
    assert!(all.contains("run `toolhost update P`"), "{all}");

    // Locked as read-only.
    std::fs::write(ws.join("toolhost.lock"), lock_text.replace("read_only = false", "read_only = true")).unwrap();
    let o = th(ws, None, &["--no-default-tools", "call", "P", r#"{"op":"env","name":"HOME"}"#]);
    assert_ne!(o.status.code(), Some(0));
    let all = format!("{}{}", cli::stdout(&o), cli::stderr(&o));
    assert!(all.contains("read-only false, locked true"), "{all}");

    // As locked: loads.
    std::fs::write(ws.join("toolhost.lock"), &lock_text).unwrap();
    ok(&th(ws, None, &["--no-default-tools", "list"]));
}

/// A registry with a token service (`WWW-Authenticate: Bearer realm=…`), written here so that
/// every answer can be hostile. The handshake is toolhost's own: the token is asked for the
/// repository's pull scope with the docker login, sent only to the registry, and a component
/// installs with it. A token service that streams 1 GiB, a `/v2/` probe that streams 1 GiB,
/// and a realm in clear text on another host are each refused, a little past a small limit
/// (issue 30: the OCI client library read the probe and the token answer whole).
#[test]
fn the_registry_handshake_is_bounded_and_its_token_goes_only_to_the_registry() {
    use std::io::Write as _;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    const TOKEN: &str = "t0k3n-for-good";
    let component = guests::PROBE.to_vec();
    let layer_digest = toolhost_registry::digest_of(&component);
    let config = b"{}".to_vec();
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.wasm.config.v0+json", "digest": toolhost_registry::digest_of(&config), "size": 2},
        "layers": [{"mediaType": "application/wasm", "digest": layer_digest, "size": component.len()}],
    })
    .to_string();
    let served = Arc::new(AtomicUsize::new(0));
    let counted = served.clone();
    let locked_digest = layer_digest.clone();
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = seen.clone();
    let server = toolhost_tests::server::Server::serve(move |mut conn| {
        let head = toolhost_tests::server::read_head(&mut conn);
        let target = head.split_whitespace().nth(1).unwrap_or("").to_string();
        let header = |name: &str| {
            head.lines()
                .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim()))
                .unwrap_or("")
                .to_string()
        };
        let (host, authorization) = (header("host"), header("authorization"));
        log.lock().unwrap().push(format!("{target} auth={authorization}"));
        let endless = |conn: &mut std::net::TcpStream, status: &str, extra: &str| {
            let _ = write!(conn, "HTTP/1.1 {status}\r\n{extra}Connection: close\r\n\r\n");
            let chunk = vec![b' '; 64 << 10];
            for _ in 0..(1 << 30) / chunk.len() {
                if conn.write_all(&chunk).is_err() {
                    break;
                }
                counted.fetch_add(chunk.len(), Ordering::SeqCst);
            }
        };
        let answer = |conn: &mut std::net::TcpStream, status: &str, extra: &str, body: &[u8]| {
            let _ =
                write!(conn, "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n", body.len());
            let _ = conn.write_all(body);
        };
        let challenge =
            |realm: &str| format!("WWW-Authenticate: Bearer realm=\"{realm}\",service=\"toolhost-test\"\r\n");
        // `/v2/` does not name a repository: the probe is hostile when the registry is named
        // `localhost` (an endless answer, which must be dropped unread).
        if target == "/v2/" {
            match host.split(':').next().unwrap_or("") {
                "localhost" => endless(&mut conn, "200 OK", ""),
                _ if authorization.is_empty() => {
                    answer(&mut conn, "401 Unauthorized", &challenge(&format!("http://{host}/token")), b"")
                }
                _ => answer(&mut conn, "200 OK", "", b"{}"),
            }
            return;
        }
        if let Some(query) = target.strip_prefix("/token?") {
            if query.contains("evil%2Fflood") {
                endless(&mut conn, "200 OK", "Content-Type: application/json\r\n");
            } else {
                answer(
                    &mut conn,
                    "200 OK",
                    "Content-Type: application/json\r\n",
                    format!(r#"{{"token":"{TOKEN}"}}"#).as_bytes(),
                );
            }
            return;
        }
        if authorization != format!("Bearer {TOKEN}") {
            let body = br#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#;
            answer(&mut conn, "401 Unauthorized", &challenge(&format!("http://{host}/token")), body);
            return;
        }
        if target.ends_with("/manifests/1") {
            answer(
                &mut conn,
                "200 OK",
                "Content-Type: application/vnd.oci.image.manifest.v1+json\r\n",
                manifest.as_bytes(),
            );
        } else if target.ends_with(&format!("/blobs/{layer_digest}")) {
            answer(&mut conn, "200 OK", "Content-Type: application/octet-stream\r\n", &component);
        } else {
            let body = br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}"#;
            answer(&mut conn, "404 Not Found", "Content-Type: application/json\r\n", body);
        }
    });
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    let registry = format!("127.0.0.1:{}", server.port);
    let login = docker_login(&registry, "alice", PASSWORD);

    let out = th(ws, Some(login.path()), &["add", &format!("oci://{registry}/good/tool:1"), "--name", "P"]);
    ok(&out);
    assert!(lock(ws).contains(&locked_digest), "{}", lock(ws));
    let requests = seen.lock().unwrap().clone();
    let token_requests: Vec<&String> = requests.iter().filter(|r| r.starts_with("/token?")).collect();
    assert!(!token_requests.is_empty(), "{requests:?}");
    for r in &token_requests {
        assert!(r.contains("scope=repository%3Agood%2Ftool%3Apull") && r.contains("service=toolhost-test"), "{r}");
        assert!(r.contains("auth=Basic "), "the login goes to the token service: {r}");
    }
    let registry_requests: Vec<&String> = requests.iter().filter(|r| r.starts_with("/v2/good/")).collect();
    assert!(registry_requests.len() >= 2, "a manifest and a layer: {requests:?}");
    for r in registry_requests {
        assert!(r.ends_with(&format!("auth=Bearer {TOKEN}")), "the registry gets the token only: {r}");
    }

    // A registry on this machine whose token service is another host, in clear text.
    let cleartext = toolhost_tests::server::Server::start(true, |_| {
        let realm = "WWW-Authenticate: Bearer realm=\"http://auth.example/token\",service=\"x\"";
        format!("HTTP/1.1 401 Unauthorized\r\n{realm}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    });
    let cases = [
        (format!("oci://{registry}/evil/flood:1"), "the registry sent more than 65536 bytes"),
        (format!("oci://localhost:{}/evil/probe:1", server.port), "HTTP 401"),
        (format!("oci://127.0.0.1:{}/evil/cleartext:1", cleartext.port), "is not HTTPS"),
    ];
    for (source, want) in cases {
        served.store(0, Ordering::SeqCst);
        let all = fails(&th(ws, Some(login.path()), &["add", &source, "--name", "Q"]), want);
        assert!(!all.contains("panicked") && !all.contains(PASSWORD), "{all}");
        std::thread::sleep(std::time::Duration::from_millis(200));
        let sent = served.load(Ordering::SeqCst);
        assert!(sent < 64 << 20, "{source}: the registry got {sent} bytes out before it was cut off");
    }
}
