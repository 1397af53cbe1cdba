//! `toolhost-test.toml`: a tool author's own cases. Each gives an input, the files to lay out
//! in a fresh workspace, the grant to run with and what the result must be; `--update` writes
//! each result back as the expected output.
//!
//! ```toml
//! [[case]]
//! name = "counts the lines of a file"
//! tool = "WordCount"                # needed only when the component has several tools
//! input = { path = "notes.txt" }
//! files = { "notes.txt" = "one\ntwo\n" }
//! grant = { fs_read = ["."] }       # default: the workspace, read-write (within the ceiling)
//! env = { API_KEY = "test" }        # values for the variables the grant names
//! [case.expect]
//! contains = ["2 lines"]            # or output = "exact text", regex = "…", is_error = false,
//!                                   # outcome = "invalid_input"
//! ```

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use toolhost::ToolResult;
use toolhost_policy::Grant;

/// The cases file.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct CasesFile {
    #[serde(default)]
    pub case: Vec<Case>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    #[serde(default)]
    pub tool: Option<String>,
    pub input: toml::Value,
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    #[serde(default)]
    pub grant: Option<Grant>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub expect: Expect,
}

#[derive(Debug, Deserialize, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The result's text, exactly.
    pub output: Option<String>,
    /// Strings the text must contain.
    #[serde(default, deserialize_with = "one_or_many")]
    pub contains: Vec<String>,
    /// A regular expression the text must match.
    pub regex: Option<String>,
    pub is_error: Option<bool>,
    /// How the call must end (`success`, `invalid_input`, `schema_error`, `timeout`, …).
    pub outcome: Option<String>,
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

impl CasesFile {
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let file: CasesFile = toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        for (i, case) in file.case.iter().enumerate() {
            if !case.input.is_table() {
                bail!(
                    "{}: case {} ({}): `input` must be a table (the tool's input object)",
                    path.display(),
                    i + 1,
                    case.name
                );
            }
            for name in case.files.keys() {
                relative_inside(name).with_context(|| format!("{}: case {}: files", path.display(), case.name))?;
            }
            if let Some(r) = &case.expect.regex {
                regex::Regex::new(r)
                    .with_context(|| format!("{}: case {}: expect.regex", path.display(), case.name))?;
            }
        }
        Ok(file)
    }
}

impl Case {
    pub fn input_json(&self) -> Value {
        serde_json::to_value(&self.input).unwrap_or(Value::Null)
    }

    /// Lay out the case's files in `workspace`.
    pub fn lay_out(&self, workspace: &Path) -> Result<()> {
        for (name, contents) in &self.files {
            let path = workspace.join(relative_inside(name)?);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&path, contents).with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
    }

    /// What in `result` differs from the expectation, one line each. `recording`: the output
    /// and `is_error` are being written as the new expectation (`--update`), so only the rest
    /// is checked: recording never makes a case pass by overwriting what else it asserts.
    pub fn mismatches(&self, result: &ToolResult, recording: bool) -> Vec<String> {
        let text = result.text();
        let e = &self.expect;
        let mut out = Vec::new();
        if let Some(want) = e.output.as_ref().filter(|_| !recording)
            && want.trim_end() != text.trim_end()
        {
            out.push(format!("output differs: {}", first_difference(want, &text)));
        }
        for s in &e.contains {
            if !text.contains(s.as_str()) {
                out.push(format!("the output does not contain {s:?}"));
            }
        }
        if let Some(r) = &e.regex
            && let Ok(re) = regex::Regex::new(r)
            && !re.is_match(&text)
        {
            out.push(format!("the output does not match /{r}/"));
        }
        if let Some(want) = e.is_error.filter(|_| !recording)
            && want != result.is_error
        {
            out.push(format!("is_error is {}, expected {want}", result.is_error));
        }
        if let Some(want) = &e.outcome
            && want != result.outcome.as_str()
        {
            out.push(format!("the call ended as {}, expected {want}", result.outcome.as_str()));
        }
        if !out.is_empty() {
            out.push(format!("the output was: {}", cut(&text)));
        }
        out
    }
}

/// `name` as a relative path that stays inside the workspace.
fn relative_inside(name: &str) -> Result<PathBuf> {
    let path = PathBuf::from(name);
    if name.is_empty() || !path.components().all(|c| matches!(c, Component::Normal(_))) {
        bail!("{name:?} must be a relative path without `..`");
    }
    Ok(path)
}

fn first_difference(want: &str, got: &str) -> String {
    for (i, (w, g)) in want.lines().zip(got.lines()).enumerate() {
        if w != g {
            return format!("line {}: expected {w:?}, got {g:?}", i + 1);
        }
    }
    format!("expected {} lines, got {}", want.lines().count(), got.lines().count())
}

fn cut(s: &str) -> String {
    if s.chars().count() <= 500 {
        format!("{s:?}")
    } else {
        format!("{:?}…", s.chars().take(500).collect::<String>())
    }
}

/// Write each case's result back into the file as `expect.output` and `expect.is_error`
/// (`results[i]` for the i-th `[[case]]`; `None` leaves a case as it is). Comments and the
/// rest of the file stay as written.
pub fn update(path: &Path, results: &[Option<ToolResult>]) -> Result<usize> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut doc: toml_edit::DocumentMut = text.parse().with_context(|| format!("parsing {}", path.display()))?;
    let Some(cases) = doc.get_mut("case").and_then(toml_edit::Item::as_array_of_tables_mut) else {
        return Ok(0);
    };
    let mut changed = 0;
    for (case, result) in cases.iter_mut().zip(results) {
        let Some(result) = result else { continue };
        let expect = case.entry("expect").or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()));
        let Some(expect) = expect.as_table_like_mut() else { continue };
        expect.insert("output", toml_edit::value(result.text()));
        expect.insert("is_error", toml_edit::value(result.is_error));
        changed += 1;
    }
    std::fs::write(path, doc.to_string()).with_context(|| format!("writing {}", path.display()))?;
    Ok(changed)
}
