//! A policy file travels beside a component (an OCI artifact's policy layer, `NAME.policy.yaml`
//! beside a file) and `toolhost add` makes it the tool's grant, so a signature covers it too:
//! the signed payload names the component's digest and the policy file's. A manifest that
//! keeps a signed component but adds, swaps or drops its policy layer (anyone who can push to
//! the repository can push one, with the same signature beside it) is not installed off a
//! terminal without `--accept-policy`, and nothing is written; signatures of the first format
//! (the component alone) still install a component published without a policy file.

use base64::Engine as _;
use std::path::Path;
use std::process::Output;
use toolhost_policy::{OciRef, ToolRef};
use toolhost_registry::Access;
use toolhost_registry::oci::{self, ComponentMeta};
use toolhost_registry::sign::Signature;
use toolhost_tests::cli::{self, fails, ok};
use toolhost_tests::guests;
use toolhost_tests::registry::Registry;

/// `toolhost ARGS…` in `ws`, off a terminal, never in `--locked` mode (CI sets CI=true).
fn th(ws: &Path, args: &[&str]) -> Output {
    cli::command(ws).env_remove("CI").args(args).stdin(std::process::Stdio::null()).output().expect("run toolhost")
}

/// A policy file granting the environment variable `key`.
fn env_policy(key: &str) -> String {
    format!("version: \"1.0\"\npermissions:\n  environment:\n    allow:\n      - key: \"{key}\"\n")
}

/// What an attacker's policy layer asks for: the user's SSH keys.
const SSH_POLICY: &str = "version: \"1.0\"\npermissions:\n  storage:\n    allow:\n      - uri: \"fs:///home/u/.ssh\"\n        access: [read]\n";

fn oci_ref(reference: &str) -> OciRef {
    match reference.parse::<ToolRef>().expect("a reference") {
        ToolRef::Oci(r) => r,
        other => panic!("not an OCI reference: {other}"),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// The signature published beside `reference`, as anyone who can read the repository gets it.
fn published_signature(reference: &str) -> Signature {
    let pulled = runtime().block_on(oci::pull(&oci_ref(reference), &Access::new())).expect("pull");
    pulled.signature.expect("a signature beside it")
}

/// Push `component` with `policy` as its policy layer (or none) to `reference`, with
/// `signature` beside the new manifest: what an attacker who can push to the repository does.
fn push_crafted(reference: &str, component: &[u8], policy: Option<&str>, signature: &Signature) {
    let meta = ComponentMeta { policy: policy.map(|p| p.as_bytes().to_vec()), ..ComponentMeta::default() };
    runtime()
        .block_on(oci::push(&oci_ref(reference), &Access::new(), component, &meta, Some(signature)))
        .expect("push the crafted manifest");
}

/// A workspace whose config requires signatures and trusts `acme.key` (made here) for
/// `oci://ADDR/acme/`; returns the public key.
fn trusting_workspace(ws: &Path, registry: &Registry) -> String {
    let public = ok(&th(ws, &["keygen", "acme.key"])).trim().to_string();
    let config = format!(
        "[signatures]\nrequire = true\n\n[signatures.signers.acme]\nkey = \"{public}\"\nsources = [\"oci://{}/acme/\"]\n",
        registry.addr
    );
    std::fs::write(ws.join("toolhost.toml"), config).unwrap();
    public
}

/// Config and lock, to compare before and after a refusal.
fn files(ws: &Path) -> (String, String) {
    let read = |f: &str| std::fs::read_to_string(ws.join(f)).unwrap_or_default();
    (read("toolhost.toml"), read("toolhost.lock"))
}

/// Published with a policy file and signed: installed under `require`, the grant
/// written and in force. The same component under a manifest whose policy layer was swapped,
/// added or dropped after signing (the publisher's signature copied beside it) is refused,
/// nothing is written, and the attacker's grant is not in toolhost.toml; `--accept-policy`
/// installs it on purpose. `update` never applies a published policy file, and says when one
/// is not the signer's.
#[test]
fn a_policy_layer_changed_after_signing_is_not_installed_without_a_yes() {
    let Some(registry) = Registry::start() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    std::fs::write(ws.join("config.wasm"), guests::WIT_CONFIG).unwrap();
    std::fs::write(ws.join("config.policy.yaml"), env_policy("WEATHER_API_KEY")).unwrap();
    trusting_workspace(ws, &registry);
    let signed = format!("{}:1", registry.reference("acme/config"));
    let out = ok(&th(ws, &["publish", "config.wasm", &signed, "--sign", "acme.key"]));
    assert!(out.contains("with its policy file"), "{out}");
    let signature = published_signature(&signed);
    let policy_digest = toolhost_registry::digest_of(env_policy("WEATHER_API_KEY").as_bytes());
    assert_eq!(signature.policy.as_ref().map(ToString::to_string), Some(policy_digest.clone()));

    // (a) As published: accepted, and its grant applied.
    let install = tempfile::tempdir().unwrap();
    let install = install.path();
    std::fs::copy(ws.join("toolhost.toml"), install.join("toolhost.toml")).unwrap();
    let add = |reference: &str, extra: &[&str]| {
        th(install, &[&["add", reference, "--function", "get-setting", "--name", "Setting"], extra].concat())
    };
    let out = ok(&add(&signed, &[]));
    assert!(out.contains("The policy file published with it becomes [tools.Setting] grant"), "{out}");
    assert!(out.contains("granted:     env(WEATHER_API_KEY)") && out.contains("signer:      acme ("), "{out}");
    let (config, lock) = files(install);
    assert!(config.contains("env = [\"WEATHER_API_KEY\"]"), "{config}");
    assert!(lock.contains(&format!("signed_policy = \"{policy_digest}\"")), "{lock}");
    let mut call = cli::command(install);
    call.env_remove("CI").env("WEATHER_API_KEY", "k-1");
    let o = call.args(["--no-default-tools", "--allow", "Setting", "call", "Setting", r#"{"key":"WEATHER_API_KEY"}"#]);
    assert_eq!(ok(&o.output().unwrap()).trim(), "k-1", "the lock's signature re-verifies at start");
    let installed = files(install);

    // (b) The signed component, another policy layer, the publisher's signature beside it.
    let fresh = || {
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(ws.join("toolhost.toml"), dir.path().join("toolhost.toml")).unwrap();
        dir
    };
    let swapped = format!("{}:swapped", registry.reference("acme/config"));
    push_crafted(&swapped, guests::WIT_CONFIG, Some(SSH_POLICY), &signature);
    let dropped = format!("{}:dropped", registry.reference("acme/config"));
    push_crafted(&dropped, guests::WIT_CONFIG, None, &signature);
    let ssh_digest = toolhost_registry::digest_of(SSH_POLICY.as_bytes());
    for (reference, why) in [
        (
            &swapped,
            format!(
                "its signature covers the policy file {policy_digest}, but the one published with it is {ssh_digest}"
            ),
        ),
        (&dropped, format!("its signature covers the policy file {policy_digest}, which is not published with it")),
    ] {
        let dir = fresh();
        let before = files(dir.path());
        let o = th(dir.path(), &["add", reference, "--function", "get-setting", "--name", "Setting"]);
        let all = fails(&o, &why);
        assert!(all.contains(&format!("toolhost add {reference} --accept-policy")), "names the way to accept: {all}");
        assert!(all.contains("not covered by the signature"), "{all}");
        assert_eq!(files(dir.path()), before, "nothing written: {all}");
        assert!(!files(dir.path()).0.contains(".ssh"));
    }
    // On a terminal, the grant is shown and asked about: a no writes nothing, a yes writes it.
    let dir = fresh();
    let no_ci = |c: &mut std::process::Command| {
        c.env_remove("CI");
    };
    let args = ["add", swapped.as_str(), "--function", "get-setting", "--name", "Setting"];
    let (code, screen) = cli::run_on_a_terminal(dir.path(), no_ci, &args, "n\n");
    assert_eq!(code, 2, "{screen}");
    assert!(screen.contains("granted:     fs-read(/home/u/.ssh)"), "{screen}");
    assert!(screen.contains("not covered by the signature") && screen.contains("asks for [fs-read(/home/u/.ssh)]"));
    assert!(
        screen.contains("Write the grant of a policy file its signer did not sign into [tools.Setting]? [y/N]"),
        "{screen}"
    );
    assert!(!files(dir.path()).0.contains(".ssh"), "no: nothing written");
    let (code, screen) = cli::run_on_a_terminal(dir.path(), no_ci, &args, "y\n");
    assert_eq!(code, 0, "{screen}");
    assert!(files(dir.path()).0.contains("fs_read = [\"/home/u/.ssh\"]"), "{}", files(dir.path()).0);
    // On purpose off a terminal, it is installed as published.
    let dir = fresh();
    let out =
        ok(&th(dir.path(), &["add", &swapped, "--function", "get-setting", "--name", "Setting", "--accept-policy"]));
    assert!(out.contains("granted:     fs-read(/home/u/.ssh)"), "{out}");
    assert!(files(dir.path()).0.contains("fs_read = [\"/home/u/.ssh\"]"), "{}", files(dir.path()).0);

    // A tag moved to the swapped manifest: `update` keeps the config's grant and says why the
    // published one is not the signer's.
    push_crafted(&signed, guests::WIT_CONFIG, Some(SSH_POLICY), &signature);
    let out = ok(&th(install, &["update", "Setting"]));
    assert!(out.contains("Setting: up to date"), "{out}");
    assert!(
        out.contains("but its signature covers the policy file") && out.contains("it is not the signer's"),
        "{out}"
    );
    assert_eq!(files(install).0, installed.0, "the config's grant stays");
    assert!(!files(install).0.contains(".ssh"));
}

/// Signed without a policy file: a policy layer added beside the signed component is refused.
#[test]
fn a_policy_layer_added_to_a_component_signed_without_one_is_refused() {
    let Some(registry) = Registry::start() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    std::fs::write(ws.join("noop.wasm"), guests::NOOP).unwrap();
    trusting_workspace(ws, &registry);
    let signed = format!("{}:1", registry.reference("acme/noop"));
    ok(&th(ws, &["publish", "noop.wasm", &signed, "--sign", "acme.key"]));
    let signature = published_signature(&signed);
    let added = format!("{}:2", registry.reference("acme/noop"));
    push_crafted(&added, guests::NOOP, Some(SSH_POLICY), &signature);

    let before = files(ws);
    let all = fails(&th(ws, &["add", &added]), "it was signed without a policy file, but one is published with it");
    assert!(all.contains("--accept-policy"), "{all}");
    assert_eq!(files(ws), before, "nothing written");
    assert!(!files(ws).0.contains(".ssh"));
    // As signed, it installs.
    ok(&th(ws, &["add", &signed]));
    assert!(files(ws).1.contains("signed_policy = \"none\""), "{}", files(ws).1);
}

/// A signature of the first format (`toolhost-signature-v1`, the component's digest alone), as
/// toolhost made them before policy files were signed: it still installs and loads a component
/// published without a policy file, and leaves a policy layer beside one uncovered.
#[test]
fn first_format_signatures_cover_a_component_without_a_policy_file_only() {
    use ed25519_dalek::Signer as _;
    let Some(registry) = Registry::start() else { return };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    let public = trusting_workspace(ws, &registry);
    let key_text = std::fs::read_to_string(ws.join("acme.key")).unwrap();
    let seed = base64::engine::general_purpose::STANDARD
        .decode(key_text.trim().strip_prefix("toolhost-ed25519-secret:").expect("a toolhost key"))
        .unwrap();
    let key = ed25519_dalek::SigningKey::from_bytes(&seed.try_into().expect("32 bytes"));
    let digest = toolhost_registry::digest_of(guests::NOOP);
    let old = Signature {
        digest: digest.clone(),
        policy: None,
        key: public.clone(),
        signature: base64::engine::general_purpose::STANDARD
            .encode(key.sign(&[b"toolhost-signature-v1\0".as_slice(), digest.as_bytes()].concat()).to_bytes()),
    };

    let with_policy = format!("{}:with-policy", registry.reference("acme/noop"));
    push_crafted(&with_policy, guests::NOOP, Some(SSH_POLICY), &old);
    let before = files(ws);
    let all = fails(&th(ws, &["add", &with_policy]), "its signature is of the first format (toolhost-signature-v1)");
    assert!(all.contains("--accept-policy"), "{all}");
    assert_eq!(files(ws), before, "nothing written");

    let plain = format!("{}:plain", registry.reference("acme/noop"));
    push_crafted(&plain, guests::NOOP, None, &old);
    let out = ok(&th(ws, &["add", &plain]));
    assert!(out.contains(&format!("signer:      acme ({public})")), "{out}");
    let (_, lock) = files(ws);
    assert!(lock.contains(&format!("signer = \"{public}\"")) && !lock.contains("signed_policy"), "{lock}");
    let out = ok(&th(ws, &["--no-default-tools", "call", "Noop", r#"{"text":"v1 still verifies"}"#]));
    assert!(out.contains("v1 still verifies"), "{out}");
}

/// A file signed with `publish FILE --sign` covers its policy file beside it: a policy file
/// changed afterwards is not installed off a terminal, and nothing is written.
#[test]
fn a_signed_files_policy_file_is_covered_too() {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    std::fs::write(ws.join("config.wasm"), guests::WIT_CONFIG).unwrap();
    std::fs::write(ws.join("config.policy.yaml"), env_policy("WEATHER_API_KEY")).unwrap();
    let public = ok(&th(ws, &["keygen", "acme.key"])).trim().to_string();
    let out = ok(&th(ws, &["publish", "config.wasm", "--sign", "acme.key"]));
    assert!(out.contains("with its policy file"), "{out}");
    let config = format!("[signatures]\nrequire = true\n\n[signatures.signers.acme]\nkey = \"{public}\"\n");
    std::fs::write(ws.join("toolhost.toml"), &config).unwrap();

    std::fs::write(ws.join("config.policy.yaml"), SSH_POLICY).unwrap();
    let before = files(ws);
    let all = fails(
        &th(ws, &["add", "config.wasm", "--function", "get-setting", "--name", "Setting"]),
        "its signature covers the policy file",
    );
    assert!(all.contains("--accept-policy"), "{all}");
    assert_eq!(files(ws), before, "nothing written");

    std::fs::write(ws.join("config.policy.yaml"), env_policy("WEATHER_API_KEY")).unwrap();
    let out = ok(&th(ws, &["add", "config.wasm", "--function", "get-setting", "--name", "Setting"]));
    assert!(out.contains("granted:     env(WEATHER_API_KEY)"), "{out}");
}
