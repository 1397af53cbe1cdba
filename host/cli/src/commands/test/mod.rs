//! `toolhost test [FILE.wasm | DIR]`: a component checked against the tool contract before
//! anyone relies on it. Per tool:
//! - its schema ([`schema`]): an object, described, its examples and defaults valid;
//! - `validate` and `is-concurrency-safe`, called twice per input with no capabilities
//!   ([`toolhost::Runtime::probe_validate`]): the same answer both times, and no trap;
//! - inputs made from the schema ([`generate`]: typical, edge, near misses; seeded) through
//!   the whole pipeline in a scratch workspace, every call allowed: none may trap, run out of
//!   time or memory, or overflow its output; a failing input is shrunk ([`shrink`]) and
//!   printed with a `toolhost call` line that reproduces it;
//! - the ceiling against what the calls did (a tool that may write but never wrote);
//! - the author's cases ([`cases`], `toolhost-test.toml`).
//!
//! The component may be a stranger's: it gets the scratch workspace, and outside it only what
//! the person passes with `--grant` ([`grant`]). What its policy file or a case asks for beyond
//! that is reported, not applied.
//!
//! Exit status: 0 when nothing is an error, 1 when something is, 2 when nothing could be
//! tested (no component, a cases file that does not parse).

mod cases;
mod generate;
mod grant;
mod report;
mod schema;
mod shrink;

use crate::setup::{self, GlobalArgs};
use anyhow::{Context, Result, bail};
use clap::Args;
use generate::{Flavor, Generator};
use report::{Counts, Finding, Report, ToolReport};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use toolhost::{
    CallOptions, EngineOptions, Event, OutcomeKind, Probe, Runtime, Session, ToolEngine, ToolInfo, ToolResult,
    ToolSource, ToolUse,
};
use toolhost_policy::{Capability, Config, Grant, Mode};

#[derive(Args, Debug)]
pub struct TestCommand {
    /// A component, or a directory: a tool project (its `dist/*.wasm`) or a directory of
    /// components (default: the current directory).
    target: Option<PathBuf>,
    /// Inputs generated per tool (near misses come on top, one for every two).
    #[arg(long, default_value_t = 100)]
    count: usize,
    /// Seed of the generated inputs: the same seed makes the same inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The cases file (default: `toolhost-test.toml` beside the component, or in the
    /// directory above it).
    #[arg(long, value_name = "FILE")]
    cases: Option<PathBuf>,
    /// Write each case's output into the cases file as what it expects.
    #[arg(long)]
    update: bool,
    /// Time limit of each call, in milliseconds.
    #[arg(long, default_value_t = 10_000, value_name = "MS")]
    timeout_ms: u64,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Give the component KIND=VALUE on purpose: fs_read=PATH, fs_write=PATH, net=HOST or
    /// env=NAME (the host's variable, with its value). Repeatable. Outside the scratch
    /// workspace it gets nothing else, whatever its policy file or cases ask for.
    #[arg(long = "grant", value_name = "KIND=VALUE")]
    grant: Vec<grant::GrantArg>,
}

/// Calls a failing input may be shrunk with (each is one call).
const SHRINK_BUDGET: usize = 300;
/// The same, for an input that ran out of time (each attempt costs the whole limit).
const SHRINK_BUDGET_TIMEOUT: usize = 4;

impl TestCommand {
    pub async fn execute(self, _global: &GlobalArgs) -> Result<u8> {
        let target = self.target.clone().unwrap_or_else(|| PathBuf::from("."));
        let files = components(&target)?;
        let given = grant::Given::new(&self.grant, &std::env::current_dir().context("the current directory")?);
        // Optimised code only: a stack overflow's depth differs between the tiers' code, and
        // the reproducing command must meet the code the test ran (the compile cache keeps it).
        let engine = ToolEngine::new(&EngineOptions::default().tiering(false))?;
        let mut reports: Vec<ToolReport> = Vec::new();
        // Each cases file, with the index of the first report of a component it applied to.
        let mut used: Vec<(PathBuf, cases::CasesFile, usize)> = Vec::new();
        for file in &files {
            let cases_path = self.cases.clone().or_else(|| cases_beside(file));
            let cases = match &cases_path {
                Some(p) => cases::CasesFile::read(p)?,
                None => cases::CasesFile::default(),
            };
            let (tool_reports, results) = self.test_file(&engine, &given, file, &cases).await;
            if self.update
                && let Some(path) = &cases_path
            {
                let n = cases::update(path, &results)?;
                eprintln!("toolhost test: recorded the output of {n} case(s) in {}", path.display());
            }
            if let Some(path) = cases_path
                && !used.iter().any(|(p, _, _)| *p == path)
            {
                used.push((path, cases, reports.len()));
            }
            reports.extend(tool_reports);
        }
        // A case naming a tool that no tested component has would never run: a typo, or the
        // wrong file; it is not skipped in silence.
        let tested: HashSet<String> = reports.iter().map(|r| r.tool.clone()).collect();
        for (path, cases, first) in &used {
            for case in &cases.case {
                if let Some(name) = case.tool.as_ref().filter(|n| !tested.contains(*n))
                    && let Some(report) = reports.get_mut(*first)
                {
                    let mut names: Vec<&String> = tested.iter().collect();
                    names.sort();
                    report.findings.push(Finding::error(
                        "case",
                        format!(
                            "case {:?} in {} names tool {name:?}, which no tested component has",
                            case.name,
                            path.display()
                        ),
                        format!("name one of: {}", names.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", ")),
                    ));
                }
            }
        }
        let report = Report::new(self.seed, self.count, reports);
        if self.json {
            crate::output::outln!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            // Findings quote what the component said (panics, stderr, `validate`'s refusals).
            crate::output::outln!("{}", crate::setup::printable_lines(report.text().trim_end()));
        }
        Ok(if report.errors > 0 { crate::output::EXIT_TOOL_ERROR } else { 0 })
    }

    /// Every tool of one component; and each case's result, in the file's order (for
    /// `--update`).
    async fn test_file(
        &self,
        engine: &ToolEngine,
        given: &grant::Given,
        file: &Path,
        cases: &cases::CasesFile,
    ) -> (Vec<ToolReport>, Vec<Option<ToolResult>>) {
        let shown = file.display().to_string();
        let failed_load = |message: String| {
            let finding = Finding::error(
                "load",
                message,
                "the component must load: `schema` runs with no capabilities and must return at once",
            );
            (
                vec![ToolReport {
                    tool: "?".into(),
                    file: shown.clone(),
                    sha256: String::new(),
                    counts: Counts::default(),
                    millis: 0,
                    findings: vec![finding],
                }],
                vec![None; cases.case.len()],
            )
        };
        let source = match ToolSource::file(file) {
            Ok(s) => s,
            Err(e) => return failed_load(toolhost::error_text(&e)),
        };
        let inspection = match toolhost::inspect(engine, &source, setup::cache_dir().as_deref()).await {
            Ok(i) => i,
            Err(e) => return failed_load(toolhost::error_text(&e)),
        };
        // Read here only to see what it asks for; one that cannot be read fails the load, as
        // it would anywhere.
        let policy = toolhost_policy::policy_file_path(file)
            .and_then(|path| toolhost_policy::read_policy_file(&path).ok().flatten().map(|grant| (path, grant)));
        let mut reports = Vec::new();
        let mut results = vec![None; cases.case.len()];
        for info in &inspection.tools {
            let started = Instant::now();
            let mut t = ToolTest::new(self, engine, file, info, &inspection.sha256, given, policy.as_ref());
            let (findings, examples) = schema::check(&info.description, &info.input_schema);
            t.findings.extend(findings);
            if let Err(e) = t.generated(examples).await {
                t.findings.push(Finding::error(
                    "load",
                    format!("{e:#}"),
                    "the component must load as it does for `inspect`",
                ));
            }
            let only_tool = inspection.tools.len() == 1;
            for (i, case) in cases.case.iter().enumerate() {
                let mine = match &case.tool {
                    Some(name) => name == &info.name,
                    None => only_tool,
                };
                if mine {
                    results[i] = t.case(case).await;
                }
            }
            if let Some(i) = cases.case.iter().position(|c| c.tool.is_none()).filter(|_| !only_tool) {
                t.findings.push(Finding::error(
                    "case",
                    format!("case {:?} names no tool, and the component has several", cases.case[i].name),
                    "give the case `tool = \"NAME\"`",
                ));
            }
            t.ceiling_check();
            reports.push(t.finish(started.elapsed().as_millis()));
        }
        (reports, results)
    }
}

/// Where a failing call went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Place {
    Validate,
    ConcurrencySafe,
    Call,
}

impl Place {
    fn name(self) -> &'static str {
        match self {
            Place::Validate => "validate",
            Place::ConcurrencySafe => "is-concurrency-safe",
            Place::Call => "call",
        }
    }
}

/// How an input broke the tool: where, and how it ended.
type Signature = (Place, OutcomeKind);

/// One tool under test: its runtime on a scratch workspace, and what was found.
struct ToolTest<'a> {
    command: &'a TestCommand,
    engine: &'a ToolEngine,
    file: &'a Path,
    info: &'a ToolInfo,
    sha256: &'a str,
    /// What the person granted with `--grant`.
    given: &'a grant::Given,
    /// The policy file beside the component and its grant, if it has one.
    policy: Option<&'a (PathBuf, Grant)>,
    findings: Vec<Finding>,
    counts: Counts,
    /// Hosts the calls reached or tried to reach (from the runtime's finish events).
    hosts: Arc<Mutex<Vec<String>>>,
    /// Whether any call changed a file of its workspace.
    wrote: bool,
    /// Failures already reported, by key: the finding's index, and how many more inputs
    /// ended the same way.
    seen: BTreeMap<String, (usize, usize)>,
    /// Where reproducing inputs too long for a command line go.
    inputs: report::InputFiles,
}

impl<'a> ToolTest<'a> {
    fn new(
        command: &'a TestCommand,
        engine: &'a ToolEngine,
        file: &'a Path,
        info: &'a ToolInfo,
        sha256: &'a str,
        given: &'a grant::Given,
        policy: Option<&'a (PathBuf, Grant)>,
    ) -> Self {
        let mut findings = Vec::new();
        // `--grant` is narrowed to the ceiling like any grant; the person hears what of it the
        // tool cannot get.
        // (Its paths are absolute: the workspace they would be resolved against plays no part.)
        let excess = if info.kind.describes_itself() {
            toolhost_policy::grant_excess(&info.capabilities, &given.grant, Path::new("/"))
        } else {
            Vec::new()
        };
        if !excess.is_empty() {
            findings.push(Finding::warning(
                "grant",
                format!("--grant gives {} more than its ceiling: {}", info.name, excess.join("; ")),
                "the tool gets only what its ceiling allows of it (a write it may only read becomes a read); drop the rest",
            ));
        }
        ToolTest {
            command,
            engine,
            file,
            info,
            sha256,
            given,
            policy,
            findings,
            counts: Counts::default(),
            hosts: Arc::default(),
            wrote: false,
            seen: BTreeMap::new(),
            inputs: report::InputFiles::default(),
        }
    }

    /// The grant a run on `workspace` gets ([`grant::confine`]): what the case asks for (else
    /// the policy file, else the default grant) inside the workspace, and `--grant`. What was
    /// asked for and not applied is reported, once per policy file or case.
    fn confine(&mut self, workspace: &Path, case: Option<&cases::Case>) -> grant::Confined {
        let default = if self.info.kind.describes_itself() { Grant::workspace_read_write() } else { Grant::none() };
        let (asked, from) = match (case.and_then(|c| c.grant.as_ref()), self.policy) {
            (Some(g), _) => (g, format!("case {:?}", case.map(|c| c.name.as_str()).unwrap_or_default())),
            (None, Some((path, g))) => (g, format!("its policy file {}", path.display())),
            (None, None) => (&default, String::new()),
        };
        let no_env = BTreeMap::new();
        let case_env = case.map_or(&no_env, |c| &c.env);
        let confined = grant::confine(asked, workspace, self.given, case_env, |n| std::env::var(n).ok());
        if !confined.not_applied.is_empty() {
            let entries: Vec<&str> = confined.not_applied.iter().map(|n| n.entry.as_str()).collect();
            let mut flags: Vec<&str> = Vec::new();
            for n in &confined.not_applied {
                if !flags.contains(&n.flag.as_str()) {
                    flags.push(&n.flag);
                }
            }
            self.report_once(format!("grant:{from}"), || {
                Finding::warning(
                    "grant",
                    format!(
                        "{from} asks for more than the scratch workspace; not applied (the test ran without it): {}",
                        entries.join(", ")
                    ),
                    format!(
                        "a component under test gets only what you pass; to grant it on purpose: {}",
                        flags.join(" ")
                    ),
                )
            });
        }
        confined
    }

    /// A runtime with only this component loaded, on `workspace`, every call allowed (the
    /// grant still bounds it), calls limited to `--timeout-ms`. The confined grant, narrowed to
    /// the ceiling, becomes the tool's `[tools.NAME] grant`, which takes the place of a policy
    /// file beside the component (so the runtime never applies that file here).
    async fn runtime(&self, workspace: &Path, confined: &grant::Confined) -> Result<Runtime> {
        let ceiling = self.info.kind.describes_itself().then_some(self.info.capabilities.as_slice());
        let grant = grant::within_ceiling(&confined.grant, ceiling, workspace);
        let mut tool = toml::Table::new();
        tool.insert("grant".into(), toml::Value::try_from(&grant).context("the grant")?);
        let mut limits = toml::Table::new();
        limits.insert("timeout_ms".into(), toml::Value::try_from(self.command.timeout_ms).context("--timeout-ms")?);
        let mut settings = toml::Table::new();
        settings.insert("limits".into(), limits.into());
        settings.insert("tools".into(), toml::Table::from_iter([(self.info.name.clone(), tool.into())]).into());
        let config =
            Config::parse(&toml::to_string(&settings)?, Path::new("toolhost test")).context("the test's settings")?;
        let hosts = self.hosts.clone();
        let mut builder = Runtime::builder()
            .engine(self.engine.clone())
            .workspace(workspace)
            .config(config)
            .permission_mode(Mode::Bypass)
            .tiering(false)
            .env(confined.env.clone())
            .events(Arc::new(move |event| {
                if let Event::Finish { hosts: h, .. } = event {
                    hosts.lock().unwrap_or_else(|e| e.into_inner()).extend(h);
                }
            }));
        if let Some(dir) = setup::cache_dir() {
            builder = builder.cache_dir(dir);
        }
        let mut runtime = builder.build().map_err(|e| anyhow::anyhow!(toolhost::error_text(&e)))?;
        let source = ToolSource::file(self.file).map_err(|e| anyhow::anyhow!(toolhost::error_text(&e)))?;
        for loaded in runtime.load_tools(source).await {
            loaded.map_err(|e| anyhow::anyhow!(toolhost::error_text(&e)))?;
        }
        if runtime.tool(&self.info.name).is_none() {
            bail!("{} did not load as {}", self.file.display(), self.info.name);
        }
        Ok(runtime)
    }

    /// The schema's examples and generated inputs, typical and edge, plus near misses.
    async fn generated(&mut self, examples: Vec<Value>) -> Result<()> {
        let workspace = tempfile::tempdir().context("a scratch workspace")?;
        std::fs::write(workspace.path().join("README.md"), "# A scratch workspace\n\nSome text.\n")?;
        std::fs::create_dir(workspace.path().join("src"))?;
        std::fs::write(workspace.path().join("src/main.txt"), "one\ntwo\nthree\n")?;
        let confined = self.confine(workspace.path(), None);
        let runtime = self.runtime(workspace.path(), &confined).await?;
        let before = snapshot(workspace.path());
        let validator = jsonschema::validator_for(&self.info.input_schema).context("the input schema")?;
        let mut generator = Generator::new(&self.info.input_schema, self.command.seed);
        let mut tried = HashSet::new();
        let mut valid = Vec::new();
        for example in examples {
            if tried.insert(example.to_string()) {
                valid.push(example);
            }
        }
        // Attempts bounded: a schema whose constraints generation cannot aim at (a pattern)
        // yields few valid inputs, which is said below rather than looped on.
        let mut attempts = 0;
        while valid.len() < self.command.count && attempts < self.command.count * 20 {
            attempts += 1;
            let flavor = if attempts % 3 == 0 { Flavor::Edge } else { Flavor::Typical };
            let input = generator.input(flavor);
            if validator.is_valid(&input) && tried.insert(input.to_string()) {
                valid.push(input);
            }
        }
        if valid.len() < self.command.count.min(10) {
            self.findings.push(Finding::warning(
                "schema",
                format!("only {} input(s) the schema accepts could be generated in {attempts} attempts", valid.len()),
                "add `examples` to the schema (or cases to toolhost-test.toml) so inputs it accepts can be tested",
            ));
        }
        let mut misses = Vec::new();
        for i in 0..valid.len().div_ceil(2) {
            let miss = generate::near_miss(&mut generator.rng, &valid[i % valid.len()]);
            if tried.insert(miss.to_string()) {
                misses.push(miss);
            }
        }
        self.counts.generated = valid.len();
        for input in valid {
            self.exercise(&runtime, &validator, input).await;
        }
        self.counts.near_misses = misses.len();
        for input in misses {
            if validator.is_valid(&input) {
                self.exercise(&runtime, &validator, input).await;
            } else {
                self.counts.near_misses_refused += 1;
                let result = self.call(&runtime, &input).await;
                if result.outcome != OutcomeKind::SchemaError {
                    self.findings.push(
                        Finding::error(
                            "schema",
                            format!(
                                "an input the schema refuses was not refused by the host ({}): the schema does not compile the same way twice",
                                result.outcome.as_str()
                            ),
                            "report this to toolhost",
                        )
                        .with_input(input),
                    );
                }
            }
        }
        self.wrote |= snapshot(workspace.path()) != before;
        Ok(())
    }

    /// One input the schema accepts: `validate` and `is-concurrency-safe` twice each, then the
    /// call; anything broken is reported once per signature, shrunk.
    async fn exercise(&mut self, runtime: &Runtime, validator: &jsonschema::Validator, input: Value) {
        let (signature, message) = match self.run_input(runtime, &input, true).await {
            Ok(()) => return,
            Err(failure) => failure,
        };
        let Some((place, outcome)) = signature else {
            // Not a failure to shrink (an answer that changed): reported as it is, once per
            // export (the message starts with its name), the other inputs counted.
            let export = message.split_whitespace().next().unwrap_or_default();
            let key = format!("determinism:{export}");
            match self.seen.get_mut(&key) {
                Some((_, more)) => *more += 1,
                None => self.report_once(key, || {
                    Finding::error("determinism", message.clone(), DETERMINISM_FIX).with_input(input.clone())
                }),
            }
            return;
        };
        let key = format!("{}:{}", place.name(), outcome.as_str());
        if let Some((_, more)) = self.seen.get_mut(&key) {
            *more += 1;
            return;
        }
        self.seen.insert(key, (self.findings.len(), 0));
        let (least, message) = self.shrink(runtime, validator, input, (place, outcome), message).await;
        let mut reproduce = report::call_command(self.file, &self.info.name, &least, &self.inputs);
        if place == Place::ConcurrencySafe {
            reproduce.push_str(" (is-concurrency-safe runs when calls are batched; `toolhost test` calls it directly)");
        }
        self.findings.push(
            Finding::error(place.name(), format!("{}: {}", outcome_words(outcome), message), fix_for(place, outcome))
                .with_input(least)
                .with_reproduce(reproduce),
        );
    }

    /// Push `finding` unless one with the same key was pushed.
    fn report_once(&mut self, key: String, finding: impl FnOnce() -> Finding) {
        if !self.seen.contains_key(&key) {
            self.seen.insert(key, (self.findings.len(), 0));
            self.findings.push(finding());
        }
    }

    /// Run `input` as the pipeline would, with each pure export called twice. `Err`: how it
    /// broke (`None` signature for an answer that changed between two calls).
    async fn run_input(
        &mut self,
        runtime: &Runtime,
        input: &Value,
        twice: bool,
    ) -> Result<(), (Option<Signature>, String)> {
        let name = &self.info.name;
        let rounds = if twice { 2 } else { 1 };
        let mut validated = None;
        for _ in 0..rounds {
            let Some(answer) = runtime.probe_validate(name, input).await else { break };
            self.counts.probes += 1;
            let answer = match answer {
                Probe::Answered(a) => a,
                Probe::Failed { outcome, message } => return Err((Some((Place::Validate, outcome)), message)),
            };
            match &validated {
                Some(first) if first != &answer => {
                    return Err((
                        None,
                        format!(
                            "`validate` answered {} and then {} for the same input",
                            validate_words(first),
                            validate_words(&answer)
                        ),
                    ));
                }
                _ => validated = Some(answer),
            }
        }
        let mut safe = None;
        for _ in 0..rounds {
            let Some(answer) = runtime.probe_concurrency_safe(name, input).await else { break };
            self.counts.probes += 1;
            let answer = match answer {
                Probe::Answered(a) => a,
                Probe::Failed { outcome, message } => return Err((Some((Place::ConcurrencySafe, outcome)), message)),
            };
            match safe {
                Some(first) if first != answer => {
                    return Err((
                        None,
                        format!("`is-concurrency-safe` answered {first} and then {answer} for the same input"),
                    ));
                }
                _ => safe = Some(answer),
            }
        }
        if matches!(validated, Some(Err(_))) {
            return Ok(());
        }
        let result = self.call(runtime, input).await;
        match broken(&result) {
            Some(outcome) => Err((Some((Place::Call, outcome)), first_line(&result.text()))),
            None => {
                if !result.is_error && result.content.is_empty() {
                    self.report_once("empty".into(), || {
                        Finding::warning(
                            "call",
                            "a successful call returned no content",
                            "return some text (even \"done\"): an empty tool_result tells the model nothing",
                        )
                        .with_input(input.clone())
                    });
                }
                Ok(())
            }
        }
    }

    /// One call through the pipeline on a fresh session.
    async fn call(&mut self, runtime: &Runtime, input: &Value) -> ToolResult {
        self.counts.calls += 1;
        let tool_use = ToolUse::new(format!("toolu_test_{}", self.counts.calls), &self.info.name, input.clone());
        runtime.call(&Session::new(), &tool_use, CallOptions::new()).await
    }

    /// The smallest input found that breaks the tool the same way, and its message.
    async fn shrink(
        &mut self,
        runtime: &Runtime,
        validator: &jsonschema::Validator,
        input: Value,
        signature: Signature,
        message: String,
    ) -> (Value, String) {
        let budget = if signature.1 == OutcomeKind::Timeout { SHRINK_BUDGET_TIMEOUT } else { SHRINK_BUDGET };
        let (mut best, mut best_message, mut spent) = (input, message, 0);
        'search: loop {
            for candidate in shrink::candidates(&best) {
                if spent >= budget {
                    break 'search;
                }
                if !validator.is_valid(&candidate) {
                    continue;
                }
                spent += 1;
                if let Err((Some(s), m)) = self.run_input(runtime, &candidate, false).await
                    && s == signature
                {
                    best = candidate;
                    best_message = m;
                    continue 'search;
                }
            }
            break;
        }
        (best, best_message)
    }

    /// One case from the cases file, in a workspace of its own; its result for `--update`.
    async fn case(&mut self, case: &cases::Case) -> Option<ToolResult> {
        self.counts.cases += 1;
        let outcome = async {
            let workspace = tempfile::tempdir().context("a scratch workspace")?;
            case.lay_out(workspace.path())?;
            let confined = self.confine(workspace.path(), Some(case));
            let runtime = self.runtime(workspace.path(), &confined).await?;
            let before = snapshot(workspace.path());
            let input = case.input_json();
            let result = self.call(&runtime, &input).await;
            let wrote = snapshot(workspace.path()) != before;
            anyhow::Ok((result, wrote))
        }
        .await;
        let (result, wrote) = match outcome {
            Ok(r) => r,
            Err(e) => {
                self.findings.push(Finding::error("case", format!("case {:?}: {e:#}", case.name), "fix the case"));
                return None;
            }
        };
        self.wrote |= wrote;
        let input = case.input_json();
        let expects_outcome = case.expect.outcome.is_some();
        if result.outcome == OutcomeKind::SchemaError && !expects_outcome {
            self.findings.push(
                Finding::error(
                    "examples",
                    format!(
                        "case {:?}: its input breaks the tool's own schema: {}",
                        case.name,
                        first_line(&result.text())
                    ),
                    "correct the case or the schema (a case meant to be refused says `outcome = \"schema_error\"`)",
                )
                .with_input(input),
            );
            return Some(result);
        }
        if let Some(outcome) = broken(&result).filter(|_| !expects_outcome) {
            self.findings.push(
                Finding::error(
                    "case",
                    format!("case {:?}: {}: {}", case.name, outcome_words(outcome), first_line(&result.text())),
                    fix_for(Place::Call, outcome),
                )
                .with_input(input.clone())
                .with_reproduce(report::call_command(self.file, &self.info.name, &input, &self.inputs)),
            );
            return Some(result);
        }
        let mismatches = case.mismatches(&result, self.command.update);
        if !mismatches.is_empty() {
            self.findings.push(
                Finding::error(
                    "case",
                    format!("case {:?}: {}", case.name, mismatches.join("\n")),
                    "fix the tool, or the case (`--update` records the outputs as they are now)",
                )
                .with_input(input),
            );
        }
        Some(result)
    }

    /// The ceiling against what the calls did: a write ceiling never written with, a network
    /// ceiling never tried.
    fn ceiling_check(&mut self) {
        let calls = self.counts.calls;
        if calls == 0 {
            return;
        }
        let writes: Vec<String> = self
            .info
            .capabilities
            .iter()
            .filter(|c| matches!(c, Capability::FsWrite(_)))
            .map(ToString::to_string)
            .collect();
        if !writes.is_empty() && !self.wrote && !self.info.read_only {
            self.findings.push(Finding::warning(
                "ceiling",
                format!("the ceiling asks for {} but none of the {calls} calls wrote a file", writes.join(", ")),
                "if the tool only reads, ask for fs-read instead (and say read-only); if it writes only for some inputs, add a case that does",
            ));
        }
        let nets: Vec<String> = self
            .info
            .capabilities
            .iter()
            .filter(|c| matches!(c, Capability::Net(_)))
            .map(ToString::to_string)
            .collect();
        let tried = !self.hosts.lock().unwrap_or_else(|e| e.into_inner()).is_empty();
        if !nets.is_empty() && !tried {
            self.findings.push(Finding::warning(
                "ceiling",
                format!("the ceiling asks for {} but none of the {calls} calls tried the network", nets.join(", ")),
                "drop what the tool never uses, or add a case (with a grant) that uses it",
            ));
        }
    }

    fn finish(mut self, millis: u128) -> ToolReport {
        for (index, more) in self.seen.values() {
            if *more > 0
                && let Some(f) = self.findings.get_mut(*index)
            {
                f.message.push_str(&format!("\n({more} more input(s) ended the same way)"));
            }
        }
        ToolReport {
            tool: self.info.name.clone(),
            file: self.file.display().to_string(),
            sha256: self.sha256.to_string(),
            counts: self.counts,
            millis,
            findings: self.findings,
        }
    }
}

const DETERMINISM_FIX: &str = "decide from the input alone: no clock, no random numbers, no state kept between calls (the host reuses instances for these exports and asks again when it batches calls)";

/// The outcomes a call must never end with, whatever its input.
fn broken(result: &ToolResult) -> Option<OutcomeKind> {
    use OutcomeKind::*;
    matches!(result.outcome, Timeout | MemoryLimit | OutOfFuel | StackOverflow | Panic | Trap | OutputLimit | HostError)
        .then_some(result.outcome)
}

fn outcome_words(outcome: OutcomeKind) -> &'static str {
    match outcome {
        OutcomeKind::Timeout => "ran out of time",
        OutcomeKind::MemoryLimit => "ran out of memory",
        OutcomeKind::OutOfFuel => "ran out of fuel",
        OutcomeKind::StackOverflow => "overflowed its stack",
        OutcomeKind::Panic => "panicked",
        OutcomeKind::Trap => "trapped",
        OutcomeKind::OutputLimit => "returned more than the output limit",
        OutcomeKind::HostError => "failed in the host",
        _ => "failed",
    }
}

fn fix_for(place: Place, outcome: OutcomeKind) -> String {
    let what = match outcome {
        OutcomeKind::StackOverflow => {
            "recursion as deep as the input: bound the depth (or use a loop) and return an error past it"
        }
        OutcomeKind::Timeout => {
            "work that grows without bound: cap it and return an error, or declare a limit in the schema"
        }
        OutcomeKind::MemoryLimit => "memory that grows with the input: bound it (maxLength, maxItems) or stream",
        OutcomeKind::OutputLimit => "a result that grows with the input: cut it and say so, or page it",
        OutcomeKind::HostError => "a result the host cannot use (see the message)",
        _ => "a crash: return tool-error (invalid-input) instead",
    };
    match place {
        Place::Validate => format!("`validate` must answer for every input the schema accepts; {what}"),
        Place::ConcurrencySafe => format!("`is-concurrency-safe` must answer for every input; {what}"),
        Place::Call => what.to_string(),
    }
}

fn validate_words(answer: &Result<(), String>) -> String {
    match answer {
        Ok(()) => "ok".into(),
        Err(m) => format!("an error ({:?})", first_line(m)),
    }
}

fn first_line(s: &str) -> String {
    let line = s.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    if line.chars().count() > 300 {
        format!("{}…", line.chars().take(300).collect::<String>())
    } else {
        line.to_string()
    }
}

/// The components `target` names: the file itself, or a directory's `*.wasm` (its `dist/`
/// ones for a tool project).
fn components(target: &Path) -> Result<Vec<PathBuf>> {
    if target.is_file() {
        return Ok(vec![target.to_path_buf()]);
    }
    if !target.is_dir() {
        bail!("{} is neither a component nor a directory", target.display());
    }
    for dir in [target.join("dist"), target.to_path_buf()] {
        if dir.is_dir() {
            let files = setup::wasm_files(&dir)?;
            if !files.is_empty() {
                return Ok(files);
            }
        }
    }
    bail!("no component in {} or its dist/ (build the tool first, e.g. ./build.sh)", target.display())
}

/// `toolhost-test.toml` beside the component, or in the directory above (a project's root,
/// for a component in `dist/`).
fn cases_beside(file: &Path) -> Option<PathBuf> {
    let dir = file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    [dir.join("toolhost-test.toml"), dir.join("..").join("toolhost-test.toml")].into_iter().find(|p| p.is_file())
}

/// Every file under `dir` with its size and modification time: equal snapshots mean no call
/// wrote (links are not followed).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u64, Option<std::time::SystemTime>, bool)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.path().symlink_metadata() else { continue };
            if meta.is_dir() {
                stack.push(path.clone());
            }
            out.insert(path, (meta.len(), meta.modified().ok(), meta.is_dir()));
        }
    }
    out
}
