//! What `add`, `update`, `publish`, `list` and `inspect` share about installed tools
//! (`[tools.NAME] source`): registry access, what a component's schema says (for the lock and
//! for people), choosing a tag, and fetching a candidate. Loading an installed tool is one
//! library step, [`toolhost_registry::Installed`], which `setup` uses as an embedder would.

use crate::setup;
use anyhow::{Context, Result};
use semver::VersionReq;
use std::path::{Path, PathBuf};
use toolhost::{EngineOptions, Inspection, ToolEngine, ToolSource};
use toolhost_policy::{Config, OciRef, ToolRef};
use toolhost_registry::installed::{effective, signer};
use toolhost_registry::lock::capability_strings;
use toolhost_registry::sign::{self, Signer, UncoveredPolicy};
use toolhost_registry::{Access, Lock, LockedTool};

/// The directory relative file sources are relative to: the config file's.
pub fn base_dir(config_file: &Path) -> PathBuf {
    match config_file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// How fetches and pushes reach registries and URLs: Mozilla's roots plus `[tls] ca_files`
/// (the roots the tools' own HTTPS requests trust), and the registry logins of the docker
/// config (`docker login`, `oras login`).
pub fn access(config: &Config) -> Result<Access> {
    let mut access = Access::new();
    if let Some(path) = toolhost_registry::access::docker_config_path() {
        access = access.with_docker_config(&path);
    }
    for file in config.tls.ca_files() {
        access = access.with_ca_file(&file).context("tls.ca_files")?;
    }
    Ok(access)
}

/// What the installed tool answers through, for the lock: the WIT package of a toolhost tool
/// (`toolhost:tool@0.1.0`), the export of a function (`test:fns/other@0.1.0#echo`, or `echo`
/// at the top level), the `wasi:cli/run` a command program exports.
pub fn wit_package(exports: &[String], kind: &toolhost::ToolKind) -> Option<String> {
    match kind {
        toolhost::ToolKind::Function { export } => Some(export.to_string()),
        toolhost::ToolKind::Command => exports.iter().find(|e| e.starts_with("wasi:cli/run@")).cloned(),
        _ => exports.iter().find_map(|e| {
            let (interface, version) = e.split_once('@')?;
            let package = interface.strip_prefix("toolhost:tool/")?;
            (!package.is_empty()).then(|| format!("toolhost:tool@{version}"))
        }),
    }
}

/// Describe fetched bytes: compile (through the cache) and run `schema` with no capabilities.
pub async fn describe(label: &str, bytes: &[u8]) -> Result<Inspection> {
    let engine = ToolEngine::new(&EngineOptions::default())?;
    let source = ToolSource::bytes(label.to_string(), bytes.to_vec());
    let cache = setup::cache_dir();
    Ok(toolhost::inspect(&engine, &source, cache.as_deref()).await?)
}

/// A signer for people: `acme (ed25519:…)`, `unsigned`, or why the signature fails.
pub fn signer_shown(config: &Config, name: &str, lock: &Lock) -> Option<String> {
    let entry = lock.tools.get(name)?;
    let source: ToolRef = config.tools.get(name)?.source.as_ref()?.get_ref().clone();
    Some(match signer(config, &source, entry) {
        Ok(s) => s.to_string(),
        Err(e) => format!("refused: {e}"),
    })
}

/// `text` with `[tools.NAME] source = "…"` (and `version = "…"`) appended; everything before
/// it kept byte for byte.
pub fn append_tool(
    text: &str,
    name: &str,
    source: &ToolRef,
    version: Option<&VersionReq>,
    function: Option<&str>,
    grant: Option<&toolhost_policy::Grant>,
) -> String {
    let bare = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    let key = if bare { name.to_string() } else { toml::Value::String(name.to_string()).to_string() };
    // With a version, the source is written without the `:latest` it reads as.
    let shown = match (source, version) {
        (ToolRef::Oci(r), Some(_)) => format!("oci://{}/{}", r.registry, r.repository),
        _ => source.to_string(),
    };
    let value = toml::Value::String(shown).to_string();
    let mut out = text.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&format!("[tools.{key}]\nsource = {value}\n"));
    if let Some(v) = version {
        out.push_str(&format!("version = {}\n", toml::Value::String(v.to_string())));
    }
    if let Some(f) = function {
        out.push_str(&format!("function = {}\n", toml::Value::String(f.to_string())));
    }
    if let Some(g) = grant {
        let lists = [("fs_read", &g.fs_read), ("fs_write", &g.fs_write), ("net", &g.net), ("env", &g.env)];
        let parts: Vec<String> = lists
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| {
                let items: Vec<String> = v.iter().map(|s| toml::Value::String(s.clone()).to_string()).collect();
                format!("{k} = [{}]", items.join(", "))
            })
            .collect();
        out.push_str(&format!("grant = {{ {} }}\n", parts.join(", ")));
    }
    out
}

/// Lines describing a fetched tool, for `add` and `update`.
pub fn show(i: &Inspection, granted: &[String], signer: &Signer) {
    let list = |c: &[String]| if c.is_empty() { "nothing".to_string() } else { c.join(", ") };
    let ceiling: Vec<String> = i.info.capabilities.iter().map(ToString::to_string).collect();
    crate::output::outln!("  name:        {}", i.info.name);
    crate::output::outln!(
        "  description: {}",
        crate::setup::printable(i.info.description.lines().next().unwrap_or(""))
    );
    if i.info.kind.describes_itself() {
        crate::output::outln!("  ceiling:     {}", crate::setup::printable(&list(&ceiling)));
    } else {
        crate::output::outln!("  kind:        {} (no ceiling: the grant alone decides)", i.info.kind);
    }
    crate::output::outln!("  granted:     {}", list(granted));
    crate::output::outln!("  signer:      {signer}");
    crate::output::outln!("  sha256:      {}", i.sha256);
}

/// What the tool `name` described by `info` is granted under `config`, as the lock records it.
pub fn locked_grant(config: &Config, name: &str, info: &toolhost::ToolInfo, workspace: &Path) -> Vec<String> {
    if info.kind.describes_itself() {
        effective(config, name, &info.capabilities, info.read_only, workspace)
    } else {
        // No ceiling: the grant alone, and without one nothing (never the default grant).
        let granted = config.tools.get(name).and_then(|t| t.grant()).map(|g| g.capabilities(workspace));
        capability_strings(&granted.unwrap_or_default(), workspace)
    }
}

/// The tool of a component to install: a function component's function `spec` (its tool name
/// or `INTERFACE#FUNCTION`), or its only tool.
fn choose_function(i: &Inspection, spec: Option<&str>) -> Result<toolhost::ToolInfo> {
    let names = || i.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ");
    match spec {
        None if i.tools.len() <= 1 => Ok(i.info.clone()),
        None => anyhow::bail!(
            "the component offers {} tools ({}): install one with --function NAME (and again for each other)",
            i.tools.len(),
            names()
        ),
        Some(spec) => i
            .tools
            .iter()
            .find(|t| match &t.kind {
                toolhost::ToolKind::Function { export } => t.name == spec || export.matches(spec),
                _ => false,
            })
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("the component has no function {spec:?} (its tools: {})", names())),
    }
}

/// A source fetched, described and judged, with the lock entry it would get.
pub struct Candidate {
    /// What the component says about itself.
    pub inspection: Inspection,
    /// Who signed it.
    pub signer: Signer,
    /// The lock entry.
    pub entry: LockedTool,
    /// The bytes.
    pub bytes: Vec<u8>,
    /// The policy file that came with it (an OCI artifact's policy layer, a file's
    /// `NAME.policy.yaml`), unparsed.
    pub policy: Option<Vec<u8>>,
    /// Set when it is signed but its signature does not cover that policy file (one added,
    /// changed or removed after signing, or a first-format signature beside one): the
    /// policy file is then not the signer's word, and `add` applies it only on a person's yes.
    pub uncovered_policy: Option<UncoveredPolicy>,
    /// How errors and questions name the policy file (its path, or `the policy layer of …`).
    pub policy_label: String,
}

impl Candidate {
    /// The grant its published policy file gives, if it came with one (errors name it as
    /// `the policy layer of oci://…`).
    pub fn published_grant(&self) -> Result<Option<toolhost_policy::Grant>> {
        let Some(bytes) = &self.policy else { return Ok(None) };
        let label = &self.policy_label;
        let text = std::str::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{label}: not UTF-8 text"))?;
        Ok(Some(toolhost_policy::parse_policy_file(text, Path::new(&label))?))
    }
}

/// `r` at the tag `version` chooses (the newest matching), or as written without one.
pub async fn choose_tag(r: &OciRef, version: Option<&VersionReq>, access: &Access) -> Result<OciRef> {
    Ok(match version {
        Some(req) => toolhost_registry::oci::choose(r, req, access).await?,
        None => r.clone(),
    })
}

/// Fetch `source` (at the newest tag `version` allows, with one) for the tool `name` (the name
/// given, or `None` for the one it declares), check its digests and signature under
/// `config`'s `[signatures]`, and describe it. For a function component, the tool is its function
/// `function` (or the config's `[tools.NAME] function`, or its only one).
pub async fn candidate(
    config: &Config,
    config_file: &Path,
    name: Option<&str>,
    function: Option<&str>,
    source: &ToolRef,
    version: Option<&VersionReq>,
    workspace: &Path,
) -> Result<Candidate> {
    let access = access(config)?;
    let at = match source {
        ToolRef::Oci(r) if version.is_some() => ToolRef::Oci(choose_tag(r, version, &access).await?),
        other => other.clone(),
    };
    let fetched = toolhost_registry::fetch(&at, &base_dir(config_file), &access).await?;
    let signer = sign::judge(fetched.signature.as_ref(), &fetched.component_digest, source, &config.signatures)?;
    let mut inspection = describe(&fetched.resolved, &fetched.bytes).await?;
    let configured =
        name.and_then(|n| config.tools.get(n)).and_then(|t| t.function.as_ref()).map(|f| f.get_ref().as_str());
    inspection.info = choose_function(&inspection, function.or(configured))?;
    let name = name.unwrap_or(&inspection.info.name);
    let ceiling = capability_strings(&inspection.info.capabilities, workspace);
    let grant = locked_grant(config, name, &inspection.info, workspace);
    let signature = fetched.signature.as_ref().filter(|_| signer != Signer::Unsigned);
    let uncovered_policy = signature.and_then(|s| s.covers_policy(fetched.policy_digest().as_deref()).err());
    let policy_label = match (&at, toolhost_policy::policy_file_path(Path::new(&fetched.resolved))) {
        (ToolRef::File(_), Some(path)) => path.display().to_string(),
        _ => format!("the policy layer of {}", fetched.resolved),
    };
    let entry = LockedTool {
        source: source.to_string(),
        version: version.map(ToString::to_string),
        resolved: fetched.resolved.clone(),
        component: fetched.component_digest.clone(),
        declared_name: inspection.info.name.clone(),
        wit: wit_package(&inspection.exports, &inspection.info.kind),
        ceiling,
        read_only: Some(inspection.info.read_only),
        grant,
        signer: signature.map(|s| s.key.clone()),
        signature: signature.map(|s| s.signature.clone()),
        signed_policy: signature.and_then(|s| s.policy.clone()),
    };
    let policy = fetched.policy;
    Ok(Candidate { inspection, signer, entry, bytes: fetched.bytes, policy, uncovered_policy, policy_label })
}

/// Ask `question` on the terminal; `false` without one (stdin or stderr not a terminal, no
/// `/dev/tty`), so that a command run by a program or on CI never takes a yes for granted.
pub fn confirm(question: &str) -> Result<bool> {
    use std::io::{BufRead as _, IsTerminal as _, Write as _};
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Ok(false);
    }
    let Ok(tty) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty") else { return Ok(false) };
    let mut out = &tty;
    write!(out, "{question} [y/N] ")?;
    out.flush()?;
    let mut answer = String::new();
    std::io::BufReader::new(&tty).read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appending_keeps_the_file() {
        let src: ToolRef = "oci://r.io/a/b:1".parse().unwrap();
        assert_eq!(append_tool("", "B", &src, None, None, None), "[tools.B]\nsource = \"oci://r.io/a/b:1\"\n");
        let tagless: ToolRef = "oci://r.io/a/b".parse().unwrap();
        let req: VersionReq = "^1.2".parse().unwrap();
        let out = append_tool("", "B", &tagless, Some(&req), None, None);
        assert_eq!(out, "[tools.B]\nsource = \"oci://r.io/a/b\"\nversion = \"^1.2\"\n");
        assert!(Config::parse(&out, Path::new("t.toml")).unwrap().tools["B"].version.is_some());
        let text = "# mine\n[limits]\nfuel = 5";
        let out = append_tool(text, "my tool", &src, None, None, None);
        assert!(out.starts_with(text));
        assert_eq!(&out[text.len()..], "\n\n[tools.\"my tool\"]\nsource = \"oci://r.io/a/b:1\"\n");
        assert!(Config::parse(&out, Path::new("t.toml")).unwrap().tools["my tool"].source.is_some());
    }

    #[test]
    fn wit_packages_from_exports() {
        let toolhost = toolhost::ToolKind::Toolhost;
        assert_eq!(wit_package(&["toolhost:tool/tool@0.1.0".into()], &toolhost), Some("toolhost:tool@0.1.0".into()));
        assert_eq!(wit_package(&["wasi:cli/run@0.2.0".into()], &toolhost), None);
        let command = toolhost::ToolKind::Command;
        assert_eq!(wit_package(&["wasi:cli/run@0.2.6".into()], &command), Some("wasi:cli/run@0.2.6".into()));
    }
}
