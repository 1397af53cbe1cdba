//! Installing tools from a real OCI registry on loopback (`docker-registry`, the CNCF
//! distribution registry), through the `toolhost` binary: publish → add → call, signatures
//! under `[signatures]`, a tag that moves (`--locked` refuses, `update` shows the capability diff
//! and needs acceptance to widen), tampered bytes in the registry and in the store.

use std::path::Path;
use std::process::Output;
use toolhost_tests::cli::{self, fails, ok, stderr};
use toolhost_tests::guests;
use toolhost_tests::registry::Registry;

/// `toolhost ARGS…` in `ws`, never in `--locked` mode unless asked (CI sets CI=true).
fn th(ws: &Path, args: &[&str]) -> Output {
    cli::command(ws).env_remove("CI").args(args).stdin(std::process::Stdio::null()).output().expect("run toolhost")
}

fn write(ws: &Path, name: &str, bytes: &[u8]) -> String {
    std::fs::write(ws.join(name), bytes).expect("write");
    name.to_string()
}

fn lock(ws: &Path) -> String {
    std::fs::read_to_string(ws.join("toolhost.lock")).unwrap_or_default()
}

/// The value of `key` in the lock entry (there is one tool in these tests' locks).
fn locked(ws: &Path, key: &str) -> String {
    let lock = lock(ws);
    let prefix = format!("{key} = ");
    let line = lock.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("no {key} in\n{lock}"));
    line.trim_start_matches(&prefix).trim_matches('"').to_string()
}

/// The `component = "…"` of the lock entry.
fn locked_component(ws: &Path) -> String {
    locked(ws, "component")
}

#[test]
fn publish_add_call_with_trusted_signatures() {
    let Some(registry) = Registry::start() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    let noop = write(ws, "noop.wasm", guests::NOOP);
    let probe = write(ws, "probe.wasm", guests::PROBE);
    let public = ok(&th(ws, &["keygen", "acme.key"])).trim().to_string();
    assert!(public.starts_with("ed25519:"), "{public}");
    let other = ok(&th(ws, &["keygen", "other.key"])).trim().to_string();

    let noop_ref = format!("{}:1.0", registry.reference("acme/noop"));
    let out = ok(&th(ws, &["publish", &noop, &noop_ref, "--sign", "acme.key"]));
    assert!(out.contains("Published Noop") && out.contains(&public), "{out}");

    let config = format!(
        "# my tools\n[signatures]\nrequire = true\n\n[signatures.signers.acme]\nkey = \"{public}\"\nsources = [\"oci://{}/acme/\"]\n",
        registry.addr
    );
    std::fs::write(ws.join("toolhost.toml"), &config).unwrap();
    let out = ok(&th(ws, &["add", &noop_ref]));
    assert!(out.contains("name:        Noop"), "{out}");
    assert!(out.contains("ceiling:     nothing"), "{out}");
    assert!(out.contains(&format!("signer:      acme ({public})")), "{out}");
    let written = std::fs::read_to_string(ws.join("toolhost.toml")).unwrap();
    assert_eq!(written, format!("{config}\n[tools.Noop]\nsource = \"{noop_ref}\"\n"), "the rest kept byte for byte");
    let l = lock(ws);
    assert!(l.contains(&format!("signer = \"{public}\"")) && l.contains("wit = \"toolhost:tool@0.1.0\""), "{l}");

    let out = ok(&th(ws, &["--no-default-tools", "call", "Noop", r#"{"text":"from the registry"}"#]));
    assert!(out.contains("from the registry"), "{out}");
    let out = ok(&th(ws, &["--no-default-tools", "list"]));
    assert!(out.contains(&format!("signer: acme ({public})")), "{out}");

    // Unsigned, and signed by a key [signatures] does not name for this source: refused, and
    // nothing is written.
    let before = (std::fs::read_to_string(ws.join("toolhost.toml")).unwrap(), lock(ws));
    let unsigned = format!("{}:1", registry.reference("acme/probe"));
    ok(&th(ws, &["publish", &probe, &unsigned]));
    fails(&th(ws, &["add", &unsigned]), "is not signed, and [signatures] require = true");
    let stranger = format!("{}:1", registry.reference("acme/stranger"));
    ok(&th(ws, &["publish", &probe, &stranger, "--sign", "other.key"]));
    fails(&th(ws, &["add", &stranger]), &format!("is signed by {other}, which [signatures] does not trust"));
    // The trusted key, outside the sources it is trusted for.
    let elsewhere = format!("{}:1", registry.reference("elsewhere/probe"));
    ok(&th(ws, &["publish", &probe, &elsewhere, "--sign", "acme.key"]));
    fails(&th(ws, &["add", &elsewhere]), "which [signatures] does not trust for this source");
    assert_eq!(before, (std::fs::read_to_string(ws.join("toolhost.toml")).unwrap(), lock(ws)));

    // A signature in the lock that does not verify stops the tool at load, before it runs.
    let l = lock(ws);
    let sig_line = l.lines().find(|l| l.starts_with("signature = ")).unwrap().to_string();
    let forged = format!("signature = \"{}\"", "A".repeat(86) + "==");
    std::fs::write(ws.join("toolhost.lock"), l.replace(&sig_line, &forged)).unwrap();
    let o = th(ws, &["--no-default-tools", "call", "Noop", "{}"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("does not verify"), "{}", stderr(&o));
}

#[test]
fn a_moved_tag_is_refused_when_locked_and_updates_show_the_capability_diff() {
    let Some(registry) = Registry::start() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    let noop = write(ws, "noop.wasm", guests::NOOP);
    let probe = write(ws, "probe.wasm", guests::PROBE);
    let tag = format!("{}:stable", registry.reference("tools/thing"));
    ok(&th(ws, &["publish", &noop, &tag]));
    // Installed under a name of the operator's choosing.
    let out = ok(&th(ws, &["add", &tag, "--name", "Thing"]));
    assert!(out.contains("signer:      unsigned"), "{out}");
    let first = locked_component(ws);
    assert!(ok(&th(ws, &["--no-default-tools", "call", "Thing", r#"{"text":"v1"}"#])).contains("v1"));
    ok(&th(ws, &["update", "--locked"]));

    // The tag moves to a component with a wider ceiling (fs-write(/), env(*)).
    ok(&th(ws, &["publish", &probe, &tag]));
    fails(&th(ws, &["--locked", "update"]), "run `toolhost update Thing`");
    let mut ci = cli::command(ws);
    let o = ci.env("CI", "true").args(["update"]).output().unwrap();
    fails(&o, "now points to");
    assert_eq!(locked_component(ws), first, "--locked never changes the lock");

    let all = fails(&th(ws, &["update", "Thing"]), "toolhost update Thing --accept-capabilities");
    assert!(all.contains("ceiling: + fs-write(/)  (wider: needs your yes)"), "{all}");
    assert!(all.contains("ceiling: + env(*)  (wider"), "{all}");
    assert!(all.contains("declared name: Noop -> Probe"), "{all}");
    assert_eq!(locked_component(ws), first, "a refused widening changes nothing");
    assert!(ok(&th(ws, &["--no-default-tools", "call", "Thing", r#"{"text":"still v1"}"#])).contains("still v1"));

    let out = ok(&th(ws, &["update", "Thing", "--accept-capabilities"]));
    assert!(out.contains("Thing: updated"), "{out}");
    let second = locked_component(ws);
    assert_ne!(second, first);
    assert!(lock(ws).contains("\"fs-write(/)\""), "{}", lock(ws));

    // Back to the narrower one: applied without asking, the diff still shown.
    ok(&th(ws, &["publish", &noop, &tag]));
    let out = ok(&th(ws, &["update"]));
    assert!(out.contains("ceiling: - fs-write(/)") && out.contains("Thing: updated"), "{out}");
    assert_eq!(locked_component(ws), first);

    // Everything is in the lock and the store: a start needs no registry.
    drop(registry);
    assert!(ok(&th(ws, &["--no-default-tools", "call", "Thing", r#"{"text":"offline"}"#])).contains("offline"));
}

#[test]
fn tampered_bytes_are_refused_in_the_registry_and_in_the_store() {
    let Some(registry) = Registry::start() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    let noop = write(ws, "noop.wasm", guests::NOOP);
    let tag = format!("{}:1", registry.reference("tools/noop"));
    ok(&th(ws, &["publish", &noop, &tag]));
    let blob = registry.blob_path(&toolhost_registry::digest_of(guests::NOOP));
    let mut bytes = std::fs::read(&blob).expect("the component's blob in the registry's storage");
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&blob, &bytes).unwrap();
    fails(&th(ws, &["add", &tag]), "digest");
    assert!(!ws.join("toolhost.toml").exists() && !ws.join("toolhost.lock").exists());

    // A local file, installed into a store of this test's own; then the store's copy changes.
    let cache = tempfile::tempdir().unwrap();
    let own = |args: &[&str]| {
        cli::command(ws).env_remove("CI").env("TOOLHOST_CACHE_DIR", cache.path()).args(args).output().unwrap()
    };
    let out = ok(&own(&["add", &noop]));
    assert!(out.contains("name:        Noop"), "{out}");
    assert!(ok(&own(&["--no-default-tools", "call", "Noop", "{}"])).contains("ok"));
    let stored = cache.path().join("components").join(format!("{}.wasm", &locked_component(ws)["sha256:".len()..]));
    let mut bytes = std::fs::read(&stored).expect("stored component");
    let end = bytes.len() - 1;
    bytes[end] ^= 0xff;
    std::fs::write(&stored, &bytes).unwrap();
    let o = own(&["--no-default-tools", "call", "Noop", "{}"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("sha256 mismatch") && stderr(&o).contains("refusing to load it"), "{}", stderr(&o));

    // A `source` with no lock entry is never fetched at start: the error names the fix.
    std::fs::write(ws.join("toolhost.lock"), "version = 1\n").unwrap();
    let o = own(&["--no-default-tools", "call", "Noop", "{}"]);
    assert!(stderr(&o).contains("is not in toolhost.lock; run `toolhost update Noop`"), "{}", stderr(&o));
    // …and no other component takes its name (and grant) meanwhile.
    let ws_dir = ws.to_str().unwrap();
    let o = own(&["--no-default-tools", "--tools", ws_dir, "call", "Noop", "{}"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("which [tools.Noop] gives to"), "{}", stderr(&o));
}

/// `oci-wasm` is the Bytecode Alliance's client for the CNCF Wasm OCI layout, what `wkg
/// publish` pushes and `wkg get` pulls with: a tool published by it installs and runs here,
/// and one published here is read back by it as a valid Wasm component artifact.
#[test]
fn artifacts_of_the_wkg_client_install_and_ours_read_back_with_it() {
    use oci_client::client::{ClientConfig, ClientProtocol};
    use oci_client::secrets::RegistryAuth;
    use oci_wasm::{WasmClient, WasmConfig};
    let Some(registry) = Registry::start() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let config =
        ClientConfig { protocol: ClientProtocol::HttpsExcept(vec![registry.addr.clone()]), ..Default::default() };
    let client = WasmClient::new(oci_client::Client::new(config));
    let reference = |repo: &str| -> oci_client::Reference { format!("{}/{repo}", registry.addr).parse().unwrap() };

    // Published by the wkg client (its own config blob, manifest and annotations).
    let (wasm_config, layer) = WasmConfig::from_raw_component(guests::NOOP.to_vec(), Some("acme".into())).unwrap();
    let annotations =
        std::collections::BTreeMap::from([("org.opencontainers.image.version".to_string(), "1.0.0".to_string())]);
    rt.block_on(client.push(
        &reference("wkg/noop:1.0.0"),
        &RegistryAuth::Anonymous,
        layer,
        wasm_config,
        Some(annotations),
    ))
    .expect("oci-wasm pushes");
    let tag = format!("{}:1.0.0", registry.reference("wkg/noop"));
    let out = ok(&th(ws, &["add", &tag]));
    assert!(out.contains("name:        Noop"), "{out}");
    assert_eq!(locked_component(ws), toolhost_registry::digest_of(guests::NOOP));
    let out = ok(&th(ws, &["--no-default-tools", "call", "Noop", r#"{"text":"pushed by wkg's client"}"#]));
    assert!(out.contains("pushed by wkg's client"), "{out}");

    // Published here, read by the wkg client: a component config it parses, one wasm layer,
    // the same bytes.
    let probe = write(ws, "probe.wasm", guests::PROBE);
    let ours = format!("{}:2", registry.reference("ours/probe"));
    ok(&th(ws, &["publish", &probe, &ours]));
    let (manifest, parsed, _digest) = rt
        .block_on(client.pull_manifest_and_config(&reference("ours/probe:2"), &RegistryAuth::Anonymous))
        .expect("oci-wasm reads toolhost's artifact");
    assert_eq!(parsed.os, "wasip2");
    assert_eq!(parsed.layer_digests, vec![toolhost_registry::digest_of(guests::PROBE)]);
    let component = parsed.component.expect("a component section");
    assert!(component.exports.iter().any(|e| e.starts_with("toolhost:tool/tool@")), "{:?}", component.exports);
    assert_eq!(manifest.layers.len(), 1);
    let image = rt.block_on(client.pull(&reference("ours/probe:2"), &RegistryAuth::Anonymous)).expect("oci-wasm pulls");
    assert_eq!(image.layers[0].data, guests::PROBE);
}

#[test]
fn a_version_requirement_installs_and_updates_within_it() {
    let Some(registry) = Registry::start() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    let noop = write(ws, "noop.wasm", guests::NOOP);
    let probe = write(ws, "probe.wasm", guests::PROBE);
    let repo = registry.reference("tools/thing");
    for (file, tag) in
        [(&noop, "1.0.0"), (&noop, "v1.1.0"), (&probe, "2.0.0"), (&probe, "1.5.0-rc.1"), (&noop, "latest")]
    {
        ok(&th(ws, &["publish", file, &format!("{repo}:{tag}")]));
    }

    // A tag and a version at once, and a requirement nothing meets: refused, nothing written.
    fails(&th(ws, &["add", &format!("{repo}:1.0.0"), "--version", "^1"]), "--version chooses the tag");
    let all = fails(&th(ws, &["add", &repo, "--version", "^3", "--name", "Thing"]), "no tag is a version matching ^3");
    assert!(all.contains("1.0.0") && all.contains("v1.1.0"), "the tags there are: {all}");
    assert!(!ws.join("toolhost.toml").exists());

    let out = ok(&th(ws, &["add", &repo, "--version", "^1", "--name", "Thing"]));
    assert!(out.contains(&format!("Fetched {repo}:v1.1.0@sha256:")), "the newest 1.x, no pre-release: {out}");
    let config = std::fs::read_to_string(ws.join("toolhost.toml")).unwrap();
    assert_eq!(config, format!("[tools.Thing]\nsource = \"{repo}\"\nversion = \"^1\"\n"));
    assert!(lock(ws).contains("version = \"^1\""), "{}", lock(ws));
    assert!(ok(&th(ws, &["--no-default-tools", "call", "Thing", r#"{"text":"v1.1"}"#])).contains("v1.1"));
    ok(&th(ws, &["--locked", "update"]));

    // A newer 1.x: drift under --locked, taken by update; 2.0.0 never.
    ok(&th(ws, &["publish", &noop, &format!("{repo}:1.2.0")]));
    fails(&th(ws, &["--locked", "update"]), &format!("{repo}:1.2.0 now points to"));
    assert!(locked(ws, "resolved").contains(":v1.1.0@"), "{}", locked(ws, "resolved"));
    let out = ok(&th(ws, &["update"]));
    assert!(out.contains("Thing: up to date") && out.contains(":1.2.0@"), "the same bytes: nothing to ask: {out}");
    assert!(locked(ws, "resolved").contains(":1.2.0@"), "{}", locked(ws, "resolved"));

    // The requirement changed by hand: a start refuses until update locks it; 2.0.0 widens.
    std::fs::write(ws.join("toolhost.toml"), config.replace("^1", "^2")).unwrap();
    let o = th(ws, &["--no-default-tools", "call", "Thing", "{}"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("the version requirement is ^2, but toolhost.lock has ^1"), "{}", stderr(&o));
    fails(&th(ws, &["update", "Thing"]), "--accept-capabilities");
    ok(&th(ws, &["update", "Thing", "--accept-capabilities"]));
    assert!(locked(ws, "resolved").contains(":2.0.0@"), "{}", locked(ws, "resolved"));
    assert_eq!(locked_component(ws), toolhost_registry::digest_of(guests::PROBE));
}

/// A second machine (another checkout: the same `toolhost.toml` and `toolhost.lock`, an empty
/// cache) gets exactly the locked tools with `toolhost update` under `CI=true`, even after the
/// tag moved on, and runs them.
#[test]
fn a_second_machine_reproduces_the_locked_tools_exactly() {
    let Some(registry) = Registry::start() else { return };
    let first = tempfile::tempdir().unwrap();
    let first = first.path();
    let noop = write(first, "noop.wasm", guests::NOOP);
    let probe = write(first, "probe.wasm", guests::PROBE);
    let tag = format!("{}:stable", registry.reference("tools/thing"));
    ok(&th(first, &["publish", &noop, &tag]));
    ok(&th(first, &["add", &tag, "--name", "Thing"]));
    ok(&th(first, &["publish", &probe, &tag]));

    let second = tempfile::tempdir().unwrap();
    let second = second.path();
    for file in ["toolhost.toml", "toolhost.lock"] {
        std::fs::copy(first.join(file), second.join(file)).unwrap();
    }
    let cache = tempfile::tempdir().unwrap();
    let on_ci = |args: &[&str]| {
        cli::command(second).env("CI", "true").env("TOOLHOST_CACHE_DIR", cache.path()).args(args).output().unwrap()
    };
    let o = on_ci(&["--no-default-tools", "call", "Thing", "{}"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("run `toolhost update` to fetch what toolhost.lock names"), "{}", stderr(&o));
    // The tag moved: reported as drift (exit 2), but the locked bytes are fetched all the same.
    let all = fails(&on_ci(&["update"]), "now points to");
    assert!(all.contains("run `toolhost update Thing` to take it"), "{all}");
    assert_eq!(lock(second), lock(first), "CI never writes the lock");
    let out = ok(&on_ci(&["--no-default-tools", "call", "Thing", r#"{"text":"same bytes"}"#]));
    assert!(out.contains("same bytes"), "the locked Noop, not the Probe the tag names now: {out}");
    let stored = cache
        .path()
        .join("components")
        .join(format!("{}.wasm", toolhost_registry::digest_hex(&locked_component(second))));
    assert_eq!(std::fs::read(stored).unwrap(), guests::NOOP);
}

/// A signed tool stays signed: an update to bytes its locked signer did not sign (here
/// unsigned) is refused off a terminal, even with `--accept-capabilities`, and the lock keeps
/// the signer until `--accept-signer` says otherwise; the change is shown.
#[test]
fn an_unsigned_update_never_replaces_a_signed_tool_silently() {
    let Some(registry) = Registry::start() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    let noop = write(ws, "noop.wasm", guests::NOOP);
    let probe = write(ws, "probe.wasm", guests::PROBE);
    let public = ok(&th(ws, &["keygen", "acme.key"])).trim().to_string();
    let tag = format!("{}:stable", registry.reference("acme/thing"));
    ok(&th(ws, &["publish", &noop, &tag, "--sign", "acme.key"]));
    let config =
        format!("[signatures.signers.acme]\nkey = \"{public}\"\nsources = [\"oci://{}/acme/\"]\n", registry.addr);
    std::fs::write(ws.join("toolhost.toml"), &config).unwrap();
    ok(&th(ws, &["add", &tag, "--name", "Thing"]));
    assert_eq!(locked(ws, "signer"), public);
    let first = locked_component(ws);

    ok(&th(ws, &["publish", &probe, &tag]));
    for args in [&["update", "Thing"][..], &["update", "Thing", "--accept-capabilities"]] {
        let all = fails(&th(ws, args), "toolhost update Thing --accept-signer");
        assert!(all.contains(&format!("signer: acme ({public}) -> unsigned  (not the locked signer")), "{all}");
        assert_eq!(locked_component(ws), first, "refused: nothing changes");
        assert_eq!(locked(ws, "signer"), public);
    }
    let out = ok(&th(ws, &["update", "Thing", "--accept-capabilities", "--accept-signer"]));
    assert!(out.contains("Thing: updated"), "{out}");
    assert_ne!(locked_component(ws), first);
    assert!(!lock(ws).contains("signer = "), "{}", lock(ws));
}

/// Components written for other hosts travel through the registry like toolhost's own: a
/// function component is installed one function at a time (`--function`), a command program
/// whole; both show their kind and that the grant alone decides, lock their component, and an
/// update to a version without the installed function is refused, changing nothing.
#[test]
fn function_components_and_command_programs_publish_install_and_update() {
    let Some(registry) = Registry::start() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    let functions = write(ws, "functions.wasm", guests::WIT_FUNCTIONS);
    let command = write(ws, "wc.wasm", guests::WIT_COMMAND);
    let other = write(ws, "config.wasm", guests::WIT_CONFIG);

    let fns = format!("{}:1", registry.reference("tools/functions"));
    ok(&th(ws, &["publish", &functions, &fns]));
    fails(&th(ws, &["add", &fns]), "install one with --function NAME");
    fails(&th(ws, &["add", &fns, "--function", "no-such"]), "the component has no function \"no-such\"");
    let out = ok(&th(ws, &["add", &fns, "--function", "other#echo", "--name", "Reverse"]));
    assert!(
        out.contains("kind:        function test:functions/other@0.1.0#echo (no ceiling: the grant alone decides)"),
        "{out}"
    );
    assert!(out.contains("granted:     nothing"), "{out}");
    let config = std::fs::read_to_string(ws.join("toolhost.toml")).unwrap();
    assert!(config.contains(&format!("[tools.Reverse]\nsource = \"{fns}\"\nfunction = \"other#echo\"\n")), "{config}");
    assert!(lock(ws).contains("wit = \"test:functions/other@0.1.0#echo\""), "{}", lock(ws));
    let out = ok(&th(ws, &["--no-default-tools", "--allow", "Reverse", "call", "Reverse", r#"{"text":"abc"}"#]));
    assert_eq!(out.trim(), "cba");
    let first = locked(ws, "component");

    let wc = format!("{}:1", registry.reference("tools/wc"));
    ok(&th(ws, &["publish", &command, &wc]));
    let out = ok(&th(ws, &["add", &wc, "--name", "Count"]));
    assert!(out.contains("kind:        command"), "{out}");
    let out = ok(&th(ws, &["--no-default-tools", "--allow", "Count", "call", "Count", r#"{"args":["echo","hi"]}"#]));
    assert!(out.contains("hi"), "{out}");

    // The tag moves to a component without the installed function: refused, nothing changes.
    ok(&th(ws, &["publish", &other, &fns]));
    let all = fails(&th(ws, &["update", "Reverse"]), "the component has no function \"other#echo\"");
    assert!(all.contains("get-setting"), "names the functions it has: {all}");
    let lock_now = lock(ws);
    assert!(lock_now.contains(&first), "{lock_now}");
    let out = ok(&th(ws, &["--no-default-tools", "--allow", "Reverse", "call", "Reverse", r#"{"text":"still"}"#]));
    assert_eq!(out.trim(), "llits");

    // Back to the very component installed: the same bytes and grant, so nothing to change,
    // and the update says so; the lock still names it.
    ok(&th(ws, &["publish", &functions, &fns]));
    let out = ok(&th(ws, &["update", "Reverse"]));
    assert!(out.contains("Reverse: up to date"), "{out}");
    assert!(lock(ws).contains(&first), "{}", lock(ws));
}

/// A policy file beside a published component travels as a layer of the artifact (as Wassette
/// publishes one); `add` installs it as the entry's grant, shown; `update` never changes the
/// config's grant for it, and says when the published one differs. A malformed policy file is
/// not published at all.
#[test]
fn a_published_policy_file_becomes_the_installed_grant() {
    let Some(registry) = Registry::start() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    let config = write(ws, "config.wasm", guests::WIT_CONFIG);
    let policy = |key: &str| {
        format!(
            "$schema: https://example.invalid/policy.json\nversion: \"1.0\"\npermissions:\n  environment:\n    allow:\n      - key: \"{key}\"\n"
        )
    };
    std::fs::write(ws.join("config.policy.yaml"), "version: \"1.0\"\npermissions:\n  storage: {alow: []}\n").unwrap();
    let tag = format!("{}:1", registry.reference("tools/config"));
    fails(&th(ws, &["publish", &config, &tag]), "unknown key \"alow\"");
    std::fs::write(ws.join("config.policy.yaml"), policy("WEATHER_API_KEY")).unwrap();
    let out = ok(&th(ws, &["publish", &config, &tag]));
    assert!(out.contains("with its policy file"), "{out}");
    // Installed in another workspace, where no policy file sits beside anything.
    let other = tempfile::tempdir().unwrap();
    let other = other.path();
    let out = ok(&th(other, &["add", &tag, "--function", "get-setting", "--name", "Setting"]));
    assert!(out.contains("The policy file published with it becomes [tools.Setting] grant"), "{out}");
    assert!(out.contains("granted:     env(WEATHER_API_KEY)"), "{out}");
    let written = std::fs::read_to_string(other.join("toolhost.toml")).unwrap();
    assert!(written.contains("env = [\"WEATHER_API_KEY\"]"), "{written}");
    let call = |key: &str| {
        let mut c = cli::command(other);
        c.env_remove("CI").env("WEATHER_API_KEY", "k-1").env("OTHER", "o-1");
        c.args(["--no-default-tools", "--allow", "Setting", "call", "Setting", &format!(r#"{{"key":"{key}"}}"#)]);
        c.output().unwrap()
    };
    assert_eq!(ok(&call("WEATHER_API_KEY")).trim(), "k-1");
    assert!(!cli::stdout(&call("OTHER")).contains("o-1"));

    // A new version asks for more: the config's grant stays, and update says so.
    std::fs::write(ws.join("config.policy.yaml"), policy("OTHER")).unwrap();
    ok(&th(ws, &["publish", &config, &tag]));
    let out = ok(&th(other, &["update", "Setting"]));
    assert!(
        out.contains("its published policy file asks for [env(OTHER)]: [tools.Setting] grant stays as written"),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(other.join("toolhost.toml")).unwrap(), written);
    assert!(!cli::stdout(&call("OTHER")).contains("o-1"));
}
