//! `Hostile`: attacks the host's filesystem boundary on request, through the raw WASI 0.2
//! filesystem API (not std), so that it can plant symlinks with relative targets, hard links and
//! renames, and open with exact flags. Its ceiling is everything (`fs-write("/")`, `env("*")`):
//! what it reaches is decided by the operator's grant and the host's checks alone.
//!
//! Paths are absolute host paths or relative to the workspace. An absolute path is split into
//! the preopen whose guest path is its longest (component-wise) prefix and the remainder, which
//! is passed verbatim (`..` and all) to the `*-at` call: no normalisation happens here, so the
//! host sees exactly the attack. Symlink targets are never resolved: they are stored verbatim.
//!
//! Every WASI failure becomes `Denied` for `access`, `not-permitted` and `read-only`, `Failed`
//! otherwise, with the message `OP PATH: CODE` (or `OP PATH -> TARGET: CODE`), CODE being the
//! WASI error code in kebab-case.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Capability, Output, Tool, ToolError, export_tool};
use wasip2::filesystem::preopens;
use wasip2::filesystem::types::{Descriptor, DescriptorFlags, DescriptorType, ErrorCode, OpenFlags, PathFlags};
use wasip2::io::streams::StreamError;

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Op {
    /// Create or truncate `path` and write `content` to it.
    Write,
    /// Open the existing `path` for writing and append `content`.
    Append,
    /// Return the contents of `path` (lossy UTF-8).
    Read,
    /// List the directory `path`: sorted names, one per line, then `errors: N`. With `steps`,
    /// they run after the first entry was read, before the rest (their outcomes follow, one
    /// line each, as for `steps`).
    List,
    /// The type, size and link count of `path`.
    Stat,
    /// Create a symlink at `path` whose target is `target`, verbatim.
    Symlink,
    /// Create a hard link at `path` to the existing `target`.
    Hardlink,
    /// Rename `path` to `target`.
    Rename,
    /// Unlink the file or remove the empty directory at `path`.
    Remove,
    /// Create the directory `path`.
    Mkdir,
    /// Return `n` characters: `content` repeated (`x` if none).
    Big,
    /// Create the symlink `path` -> `target`, then return `n` characters as `big` does.
    SymlinkBig,
    /// Open `path` with the flags in `content` (comma-separated among `create`, `truncate`,
    /// `exclusive`, `directory`, `write`, `read`) and report success or the error.
    Open,
    /// Open the directory `path` (its last name followed per `follow`), then return the
    /// contents of `target`, a path relative to that directory's descriptor.
    ReadIn,
    /// Start listing the directory `path`, drop its descriptor, open the directory `target`,
    /// then stat (not followed) each name the listing still yields beneath `target`: one line
    /// per name, `NAME: ok` or `NAME: CODE`. Descriptor numbers are reused, so the second
    /// directory may get the first one's.
    ListSwap,
    /// Run `steps` in order within this one call (what the host learns in one step can be
    /// stale in the next); the output has one line per step, `ok: OUTPUT` or `error: MESSAGE`.
    Steps,
}

#[derive(Deserialize, JsonSchema)]
struct Input {
    op: Op,
    /// An absolute host path, or a path relative to the workspace.
    path: Option<String>,
    /// The symlink's target (verbatim), the hard link's existing file, or the new name.
    target: Option<String>,
    /// What to write or repeat; for `open`, the flags.
    content: Option<String>,
    /// How many characters `big` and `symlink_big` return.
    n: Option<u64>,
    /// Claim to be concurrency-safe (true or not).
    claim_safe: Option<bool>,
    /// Follow a symlink in the last component (default true; false for `hardlink`).
    follow: Option<bool>,
    /// For `steps`: the operations to run, in order (for `list`: in the middle of the listing).
    steps: Option<Vec<Input>>,
}

struct Hostile;

fn need<'a>(value: &'a Option<String>, what: &str) -> Result<&'a str, ToolError> {
    value.as_deref().ok_or_else(|| ToolError::InvalidInput(format!("`{what}` is required")))
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Write => "write",
        Op::Append => "append",
        Op::Read => "read",
        Op::List => "list",
        Op::Stat => "stat",
        Op::Symlink => "symlink",
        Op::Hardlink => "hardlink",
        Op::Rename => "rename",
        Op::Remove => "remove",
        Op::Mkdir => "mkdir",
        Op::Big => "big",
        Op::SymlinkBig => "symlink_big",
        Op::Open => "open",
        Op::ReadIn => "read_in",
        Op::ListSwap => "list_swap",
        Op::Steps => "steps",
    }
}

/// `what` is `PATH` or `PATH -> TARGET`, as given in the input.
fn wasi_err(op: &str, what: &str, code: ErrorCode) -> ToolError {
    let msg = format!("{op} {what}: {}", code.name());
    match code {
        ErrorCode::Access | ErrorCode::NotPermitted | ErrorCode::ReadOnly => ToolError::Denied(msg),
        _ => ToolError::Failed(msg),
    }
}

fn type_name(t: DescriptorType) -> &'static str {
    match t {
        DescriptorType::Unknown => "unknown",
        DescriptorType::BlockDevice => "block-device",
        DescriptorType::CharacterDevice => "character-device",
        DescriptorType::Directory => "directory",
        DescriptorType::Fifo => "fifo",
        DescriptorType::SymbolicLink => "symbolic-link",
        DescriptorType::RegularFile => "regular-file",
        DescriptorType::Socket => "socket",
    }
}

fn path_flags(follow: bool) -> PathFlags {
    if follow { PathFlags::SYMLINK_FOLLOW } else { PathFlags::empty() }
}

/// The preopened directories and the workspace, for turning input paths into `(dir, rel)`.
struct Fs {
    preopens: Vec<(Descriptor, String)>,
    workspace: Option<String>,
}

impl Fs {
    fn new() -> Self {
        let workspace = toolhost_sdk::context_get_as::<String>(toolhost_sdk::WORKSPACE_KEY);
        Self { preopens: preopens::get_directories(), workspace }
    }

    /// The preopen whose guest path is the longest prefix of `path` (made absolute against the
    /// workspace), and the rest of `path`, verbatim, as the relative path (`.` if empty).
    fn resolve(&self, op: &str, path: &str) -> Result<(&Descriptor, String), ToolError> {
        let absolute = if path.starts_with('/') {
            path.to_string()
        } else {
            let ws = self.workspace.as_deref().ok_or_else(|| {
                ToolError::InvalidInput(format!("{op} {path}: relative path but the host gave no workspace"))
            })?;
            format!("{}/{path}", ws.trim_end_matches('/'))
        };
        let parts: Vec<&str> = absolute.split('/').filter(|c| !c.is_empty()).collect();
        let mut best: Option<(usize, &Descriptor)> = None;
        for (dir, guest) in &self.preopens {
            let prefix: Vec<&str> = guest.split('/').filter(|c| !c.is_empty()).collect();
            let matches = guest.starts_with('/') && prefix.len() <= parts.len() && prefix[..] == parts[..prefix.len()];
            if matches && best.is_none_or(|(len, _)| prefix.len() > len) {
                best = Some((prefix.len(), dir));
            }
        }
        let (len, dir) = best.ok_or_else(|| {
            let guests: Vec<&str> = self.preopens.iter().map(|(_, g)| g.as_str()).collect();
            ToolError::Denied(format!("{op} {path}: no preopen covers it (preopens: [{}])", guests.join(", ")))
        })?;
        let rest = parts[len..].join("/");
        Ok((dir, if rest.is_empty() { ".".into() } else { rest }))
    }
}

fn write_all(op: &str, path: &str, file: &Descriptor, bytes: &[u8]) -> Result<(), ToolError> {
    let mut offset = 0usize;
    while offset < bytes.len() {
        let n = file.write(&bytes[offset..], offset as u64).map_err(|c| wasi_err(op, path, c))?;
        if n == 0 {
            return Err(ToolError::Failed(format!("{op} {path}: wrote 0 bytes")));
        }
        offset += n as usize;
    }
    Ok(())
}

/// The contents of `rel` beneath `dir` (lossy UTF-8).
fn read_file(
    dir: &Descriptor,
    follow: PathFlags,
    rel: &str,
    err: impl Fn(ErrorCode) -> ToolError,
) -> Result<String, ToolError> {
    let file = dir.open_at(follow, rel, OpenFlags::empty(), DescriptorFlags::READ).map_err(&err)?;
    let mut bytes = Vec::new();
    loop {
        let (chunk, eof) = file.read(65536, bytes.len() as u64).map_err(&err)?;
        bytes.extend_from_slice(&chunk);
        if eof || chunk.is_empty() {
            break;
        }
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn stream_err(op: &str, path: &str, err: StreamError) -> ToolError {
    match err {
        StreamError::LastOperationFailed(e) => match wasip2::filesystem::types::filesystem_error_code(&e) {
            Some(code) => wasi_err(op, path, code),
            None => ToolError::Failed(format!("{op} {path}: {}", e.to_debug_string())),
        },
        StreamError::Closed => ToolError::Failed(format!("{op} {path}: stream closed")),
    }
}

fn big(content: Option<&str>, n: Option<u64>) -> Result<String, ToolError> {
    let n = n.ok_or_else(|| ToolError::InvalidInput("`n` is required".into()))? as usize;
    let unit = match content {
        Some(c) if !c.is_empty() => c,
        _ => "x",
    };
    Ok(unit.chars().cycle().take(n).collect())
}

fn parse_open_flags(spec: &str) -> Result<(OpenFlags, DescriptorFlags), ToolError> {
    let mut open = OpenFlags::empty();
    let mut desc = DescriptorFlags::empty();
    for flag in spec.split(',').map(str::trim).filter(|f| !f.is_empty()) {
        match flag {
            "create" => open |= OpenFlags::CREATE,
            "truncate" => open |= OpenFlags::TRUNCATE,
            "exclusive" => open |= OpenFlags::EXCLUSIVE,
            "directory" => open |= OpenFlags::DIRECTORY,
            "write" => desc |= DescriptorFlags::WRITE,
            "read" => desc |= DescriptorFlags::READ,
            other => return Err(ToolError::InvalidInput(format!("open: unknown flag `{other}`"))),
        }
    }
    Ok((open, desc))
}

impl Tool for Hostile {
    type Input = Input;
    const NAME: &'static str = "Hostile";
    const DESCRIPTION: &'static str =
        "Attacks the host's filesystem boundary (symlinks, hard links, renames, raw opens), for sandbox tests.";
    const PERMISSION_SUBJECT: Option<&'static str> = Some("/path");

    fn capabilities() -> Vec<Capability> {
        vec![Capability::FsWrite("/".into()), Capability::Env("*".into())]
    }

    fn is_concurrency_safe(input: &Input) -> bool {
        input.claim_safe.unwrap_or(false)
    }

    fn call(input: Input) -> Result<Output, ToolError> {
        run(&input).map(Output::text)
    }
}

fn error_text(e: &ToolError) -> String {
    match e {
        ToolError::InvalidInput(m) | ToolError::Denied(m) | ToolError::Failed(m) => m.clone(),
    }
}

/// One line per step: `ok: OUTPUT` (its lines joined by ` | `) or `error: MESSAGE`.
fn run_steps(steps: &[Input]) -> Vec<String> {
    steps
        .iter()
        .map(|step| match run(step) {
            Ok(out) => format!("ok: {}", out.replace('\n', " | ")),
            Err(e) => format!("error: {}", error_text(&e)),
        })
        .collect()
}

fn run(input: &Input) -> Result<String, ToolError> {
    let op = op_name(input.op);
    if input.op == Op::Big {
        return big(input.content.as_deref(), input.n);
    }
    if input.op == Op::Steps {
        let steps = input.steps.as_deref().ok_or_else(|| ToolError::InvalidInput("`steps` is required".into()))?;
        return Ok(run_steps(steps).join("\n"));
    }
    let path = need(&input.path, "path")?;
    let fs = Fs::new();
    let (dir, rel) = fs.resolve(op, path)?;
    let follow = path_flags(input.follow.unwrap_or(true));
    let content = input.content.as_deref().unwrap_or("");
    let err = |c| wasi_err(op, path, c);
    match input.op {
        Op::Write => {
            let file = dir
                .open_at(follow, &rel, OpenFlags::CREATE | OpenFlags::TRUNCATE, DescriptorFlags::WRITE)
                .map_err(err)?;
            write_all(op, path, &file, content.as_bytes())?;
            Ok(format!("wrote {} bytes", content.len()))
        }
        Op::Append => {
            let file = dir.open_at(follow, &rel, OpenFlags::empty(), DescriptorFlags::WRITE).map_err(err)?;
            let stream = file.append_via_stream().map_err(err)?;
            for chunk in content.as_bytes().chunks(4096) {
                stream.blocking_write_and_flush(chunk).map_err(|e| stream_err(op, path, e))?;
            }
            Ok(format!("appended {} bytes", content.len()))
        }
        Op::Read => read_file(dir, follow, &rel, err),
        Op::ListSwap => {
            let target = need(&input.target, "target")?;
            let (target_dir, target_rel) = fs.resolve(op, target)?;
            let d = dir.open_at(follow, &rel, OpenFlags::DIRECTORY, DescriptorFlags::READ).map_err(err)?;
            let entries = d.read_directory().map_err(err)?;
            drop(d);
            let other = target_dir
                .open_at(follow, &target_rel, OpenFlags::DIRECTORY, DescriptorFlags::READ)
                .map_err(|c| wasi_err(op, target, c))?;
            let mut lines = Vec::new();
            while let Ok(Some(entry)) = entries.read_directory_entry() {
                let outcome = match other.stat_at(PathFlags::empty(), &entry.name) {
                    Ok(_) => "ok".to_string(),
                    Err(code) => code.name().to_string(),
                };
                lines.push(format!("{}: {outcome}", entry.name));
            }
            lines.sort();
            Ok(lines.join("\n"))
        }
        Op::ReadIn => {
            let target = need(&input.target, "target")?;
            let d = dir.open_at(follow, &rel, OpenFlags::DIRECTORY, DescriptorFlags::READ).map_err(err)?;
            read_file(&d, PathFlags::SYMLINK_FOLLOW, target, |c| wasi_err(op, &format!("{path} then {target}"), c))
        }
        Op::List => {
            let d = dir.open_at(follow, &rel, OpenFlags::DIRECTORY, DescriptorFlags::READ).map_err(err)?;
            let entries = d.read_directory().map_err(err)?;
            let mut names = Vec::new();
            let mut errors = 0u64;
            let mut during = Vec::new();
            loop {
                match entries.read_directory_entry() {
                    Ok(Some(entry)) => {
                        names.push(entry.name);
                        if names.len() == 1
                            && let Some(steps) = &input.steps
                        {
                            during = run_steps(steps);
                        }
                    }
                    Ok(None) => break,
                    // Keep going: one unreadable entry must not hide the others. A stream
                    // that only ever fails would loop forever, hence the cap.
                    Err(_) => {
                        errors += 1;
                        if errors >= 100_000 {
                            break;
                        }
                    }
                }
            }
            names.sort();
            names.push(format!("errors: {errors}"));
            names.extend(during);
            Ok(names.join("\n"))
        }
        Op::Stat => {
            let stat = dir.stat_at(follow, &rel).map_err(err)?;
            Ok(format!("type: {}\nsize: {}\nlinks: {}", type_name(stat.type_), stat.size, stat.link_count))
        }
        Op::Symlink | Op::SymlinkBig => {
            let target = need(&input.target, "target")?;
            dir.symlink_at(target, &rel).map_err(|c| wasi_err(op, &format!("{path} -> {target}"), c))?;
            if input.op == Op::SymlinkBig {
                return big(input.content.as_deref(), input.n);
            }
            Ok(format!("linked {path} -> {target}"))
        }
        Op::Hardlink => {
            let target = need(&input.target, "target")?;
            let (old_dir, old_rel) = fs.resolve(op, target)?;
            let old_flags = path_flags(input.follow.unwrap_or(false));
            old_dir
                .link_at(old_flags, &old_rel, dir, &rel)
                .map_err(|c| wasi_err(op, &format!("{path} -> {target}"), c))?;
            Ok(format!("linked {path} -> {target}"))
        }
        Op::Rename => {
            let target = need(&input.target, "target")?;
            let (new_dir, new_rel) = fs.resolve(op, target)?;
            dir.rename_at(&rel, new_dir, &new_rel).map_err(|c| wasi_err(op, &format!("{path} -> {target}"), c))?;
            Ok(format!("renamed {path} -> {target}"))
        }
        Op::Remove => match dir.unlink_file_at(&rel) {
            Ok(()) => Ok(format!("removed {path}")),
            Err(code @ (ErrorCode::IsDirectory | ErrorCode::NotPermitted | ErrorCode::Access)) => {
                // unlink refuses directories (EISDIR on Linux, EPERM elsewhere): if it is one,
                // remove it as a directory; otherwise the first refusal stands.
                match dir.stat_at(PathFlags::empty(), &rel) {
                    Ok(stat) if stat.type_ == DescriptorType::Directory => {
                        dir.remove_directory_at(&rel).map_err(err)?;
                        Ok(format!("removed {path}"))
                    }
                    _ => Err(err(code)),
                }
            }
            Err(code) => Err(err(code)),
        },
        Op::Mkdir => {
            dir.create_directory_at(&rel).map_err(err)?;
            Ok(format!("created {path}"))
        }
        Op::Open => {
            let (open_flags, desc_flags) = parse_open_flags(content)?;
            let file = dir.open_at(follow, &rel, open_flags, desc_flags).map_err(err)?;
            let kind = file.get_type().map(type_name).unwrap_or("unknown");
            Ok(format!("opened {kind}"))
        }
        Op::Big | Op::Steps => unreachable!("handled above"),
    }
}

export_tool!(Hostile);
