//! Loading tools into a runtime: the bytes checked against every pin before they run,
//! compiled and described (in parallel for many), then checked against the config and the
//! tools already loaded, and registered with their resolved grant ([`super::grant`]).

use super::grant::{GrantInputs, ToolGrant, resolve_grant};
use super::{GrantFrom, LoadedTool, Runtime};
use crate::error::{Error, LoadError, Result};
use crate::kinds::ToolKind;
use crate::loading::loader::{self, Described, ToolInfo};
use crate::loading::source::{Origin, ToolSource};
use std::path::Path;
use std::sync::Arc;
use toolhost_policy::Capability;

/// A tool compiled and described, not yet registered.
struct Prepared {
    /// Shared by the tools of one component (a function component's functions).
    code: Arc<loader::Code>,
    info: ToolInfo,
    validator: jsonschema::Validator,
}

impl Runtime {
    /// Load a tool and register it under the name its schema gives. Its grant is the config's
    /// `[tools.NAME].grant`, or the default grant; its limits come from the config.
    ///
    /// Before anything is done with the bytes, their sha256 is checked against the source's pin
    /// and the config's `[tools.NAME] sha256` when the name is known (an embedded tool, a
    /// source [`with_name`](ToolSource::with_name)); a tool whose name comes only from its own
    /// schema is checked against a pin for that name after `schema` ran (with no capabilities).
    /// `schema` runs under `limits.load_timeout_ms` (default 5 s), once per component digest
    /// and toolhost build: its answer, or its failure, is kept with the compiled code.
    ///
    /// # Errors
    ///
    /// [`Error::Load`] with a message naming the source for bytes that are not a tool of this
    /// world, a failing `schema` export, a bad schema, a sha256 mismatch, a name other than
    /// the one required, or a name the config gives to another file;
    /// [`Error::Duplicate`] if the name is taken (the loaded tool stays).
    ///
    /// A function component offers one tool per exported function: all are registered, and
    /// this returns the first one's name (or, if none loaded, the first error);
    /// [`Runtime::load_tools`] says what happened to each.
    pub async fn load(&mut self, source: ToolSource) -> Result<String> {
        let mut results = self.load_tools(source).await.into_iter();
        let first = results.next().expect("a component offers at least one tool or fails");
        if first.is_ok() {
            return first;
        }
        results.find(Result::is_ok).unwrap_or(first)
    }

    /// Load every tool of a component (one, except for a function component, which offers
    /// one per exported function): one result per tool, in the component's order; an error
    /// of the whole component is the only result.
    pub async fn load_tools(&mut self, source: ToolSource) -> Vec<Result<String>> {
        match self.prepare(&source).await {
            Ok(tools) => tools.into_iter().map(|p| p.and_then(|p| self.register(&source, p))).collect(),
            Err(e) => vec![Err(e)],
        }
    }

    /// Load the tool set of a config in one step, as `toolhost` does: `defaults` (e.g. the
    /// embedded default tools) except those the config replaces (a `[tools.NAME]` with `path`
    /// or `source` owns NAME), then each `[tools.NAME] path` of the config (named by its key and
    /// pinned by its `sha256`, both checked before the bytes run), then `others` (installed
    /// tools, a tools directory's files; an `Err` is reported as it is), all prepared in
    /// parallel ([`Runtime::load_all`]). Returns one error per tool that did not load; the rest
    /// are loaded whatever failed.
    pub async fn load_configured(&mut self, defaults: Vec<ToolSource>, others: Vec<Result<ToolSource>>) -> Vec<Error> {
        let mut errors = Vec::new();
        let replaced = |name: &str| self.config.tools.get(name).is_some_and(|t| t.path.is_some() || t.source.is_some());
        let mut sources: Vec<ToolSource> =
            defaults.into_iter().filter(|s| !s.known_name().is_some_and(replaced)).collect();
        for (name, tool) in &self.config.tools {
            let Some(path) = &tool.path else { continue };
            match ToolSource::file(path.get_ref()) {
                Ok(source) => sources.push(match &tool.sha256 {
                    Some(pin) => source.with_name(name.clone()).with_sha256(pin.get_ref().clone()),
                    None => source.with_name(name.clone()),
                }),
                Err(e) => errors.push(e),
            }
        }
        for other in others {
            match other {
                Ok(source) => sources.push(source),
                Err(e) => errors.push(e),
            }
        }
        errors.extend(self.load_all(sources).await.into_iter().filter_map(Result::err));
        errors
    }

    /// Load many tools at once: compiled and described in parallel (so a tool that hangs at
    /// load delays the others by nothing but its own deadline), then registered in the order
    /// given, as [`Runtime::load_tools`] would one by one. One result per tool, in order (one
    /// per source, except for function components).
    pub async fn load_all(&mut self, sources: Vec<ToolSource>) -> Vec<Result<String>> {
        let prepared = {
            let this = &*self;
            futures::future::join_all(sources.iter().map(|s| this.prepare(s))).await
        };
        let mut results = Vec::with_capacity(sources.len());
        for (source, prepared) in sources.iter().zip(prepared) {
            match prepared {
                Ok(tools) => results.extend(tools.into_iter().map(|p| p.and_then(|p| self.register(source, p)))),
                Err(e) => results.push(Err(e)),
            }
        }
        results
    }

    /// Check the bytes (and pins) before anything else, compile and describe: the
    /// component's tools, each prepared or refused.
    async fn prepare(&self, source: &ToolSource) -> Result<Vec<Result<Prepared>>> {
        let known = source.known_name();
        let config_pin = known.and_then(|n| self.config.tools.get(n)).and_then(|t| t.sha256.as_ref());
        if let (Some(pin), Some(want)) = (config_pin, &source.expected_sha256)
            && !pin.get_ref().eq_ignore_ascii_case(want)
        {
            return Err(source.err(LoadError::PinsDisagree { config: pin.get_ref().clone(), given: want.clone() }));
        }
        let pin = source.expected_sha256.as_deref().or(config_pin.map(|p| p.get_ref().as_str()));
        let sha256 = loader::check_bytes(source, pin)?;
        let code = Arc::new(loader::Code::new(source, sha256, self.cache.as_ref()));
        let limits = match known {
            Some(name) => self.config.limits_for(name),
            None => self.config.global_limits(),
        };
        let described = loader::describe(&self.engine, &code, source, &limits, self.cache.as_ref()).await?;
        let described = self.select_function(source, described)?;
        Ok(described
            .into_iter()
            .map(|d| {
                d.map(|(info, validator)| Prepared { code: code.clone(), info, validator }).map_err(|e| source.err(e))
            })
            .collect())
    }

    /// A function component loaded under a name (`[tools.NAME] path`, an installed tool's
    /// name) is one of its functions: the one `[tools.NAME] function` names, or its only one.
    fn select_function(&self, source: &ToolSource, described: Vec<Described>) -> Result<Vec<Described>> {
        let is_function = |d: &Described| {
            matches!(d, Ok((info, _)) if matches!(info.kind, ToolKind::Function { .. }))
                || matches!(d, Err(LoadError::Unsupported { .. }))
        };
        let Some(name) = source.known_name() else { return Ok(described) };
        if !described.iter().any(is_function) {
            return Ok(described);
        }
        let config_error =
            |message: String| source.err(LoadError::Config(Arc::new(self.config.tool_error(name, &message))));
        // Each function by its default tool name (a refused one by its export).
        let label = |d: &Described| match d {
            Ok((info, _)) => info.name.clone(),
            Err(LoadError::Unsupported { export, .. }) => export.clone(),
            Err(_) => String::new(),
        };
        let available = described.iter().map(label).collect::<Vec<_>>().join(", ");
        let spec = self.config.tools.get(name).and_then(|t| t.function.as_ref()).map(|s| s.get_ref().clone());
        let chosen = match &spec {
            Some(spec) => described.into_iter().find(|d| match d {
                Ok((ToolInfo { kind: ToolKind::Function { export }, name, .. }, _)) => {
                    name == spec || export.matches(spec)
                }
                Err(LoadError::Unsupported { export, .. }) => export == spec,
                _ => false,
            }),
            None if described.len() == 1 => described.into_iter().next(),
            None => {
                return Err(config_error(format!(
                    "{} exports {} functions ({}); say which this tool is with `function = \"NAME\"`",
                    source.origin,
                    described.len(),
                    available
                )));
            }
        };
        match chosen {
            Some(Ok((mut info, validator))) => {
                info.name = name.to_string();
                Ok(vec![Ok((info, validator))])
            }
            Some(Err(e)) => Ok(vec![Err(e)]),
            None => Err(config_error(format!(
                "{} exports no function {:?} (its functions: {available})",
                source.origin,
                spec.unwrap_or_default()
            ))),
        }
    }

    /// Check a prepared tool against the config and the tools already loaded, and register it.
    fn register(&mut self, source: &ToolSource, prepared: Prepared) -> Result<String> {
        let Prepared { code, mut info, mut validator } = prepared;
        if let Some(name) = &source.rename {
            info.name = name.clone();
        }
        let name = info.name.clone();
        let load_error = |cause: LoadError| Error::Load { origin: source.origin.to_string(), cause };
        let config_error = |e: toolhost_policy::ConfigError| load_error(LoadError::Config(Arc::new(e)));
        if let Some(expected) = &source.expected_name
            && *expected != name
        {
            let message = format!("the file declares a tool named {name:?}, not {expected:?}; not loaded");
            return Err(config_error(self.config.tool_error(expected, &message)));
        }
        // A `[tools.NAME]` with a path owns NAME (and its grant): no other file takes it over,
        // whether or not that path loaded.
        if let Some(path) = self.config.tools.get(&name).and_then(|t| t.path.as_ref()) {
            let same =
                |a: &Path, b: &Path| a.canonicalize().ok().is_some_and(|a| b.canonicalize().is_ok_and(|b| a == b));
            let is_that_file = matches!(&source.origin, Origin::File(file) if same(file, path.get_ref()));
            if !is_that_file {
                let message = format!(
                    "{} declares the tool name {name:?}, which [tools.{name}] gives to {}; not loaded (rename one of them)",
                    source.origin,
                    path.get_ref().display()
                );
                return Err(config_error(self.config.tool_error(&name, &message)));
            }
        }
        // Likewise a `[tools.NAME] source` (an installed tool, loaded renamed to NAME): no
        // other component takes NAME and its grant, even when the installed one failed to load.
        if let Some(installed) = self.config.tools.get(&name).and_then(|t| t.source.as_ref())
            && source.rename.as_deref() != Some(name.as_str())
        {
            let message = format!(
                "{} declares the tool name {name:?}, which [tools.{name}] gives to {}; not loaded (rename one of them)",
                source.origin,
                installed.get_ref()
            );
            return Err(config_error(self.config.tool_error(&name, &message)));
        }
        if let Some(existing) = self.pool.component(&name) {
            return Err(Error::Duplicate {
                origin: source.origin.to_string(),
                name,
                existing: existing.origin.to_string(),
            });
        }
        // `read-only` is a promise the host keeps for the tool (MCP's readOnlyHint, plan mode,
        // no asks in default mode): a tool cannot both make it and ask to write.
        if info.read_only
            && let Some(Capability::FsWrite(dir)) =
                info.capabilities.iter().find(|c| matches!(c, Capability::FsWrite(_)))
        {
            return Err(load_error(LoadError::ReadOnlyWrites { name, dir: dir.clone() }));
        }
        if let Some(check) = &source.declaration_check
            && let Err(why) = check.check(&info)
        {
            return Err(load_error(LoadError::embedder(why)));
        }
        let tool_config = self.config.tools.get(&name);
        // What a function component or a command program cannot say about itself, the
        // config may; a toolhost tool says it itself, so there these keys are mistakes.
        if let Some(t) = tool_config {
            if info.kind.describes_itself() {
                let given: Vec<&str> = [
                    ("function", t.function.is_some()),
                    ("concurrency_safe", t.concurrency_safe.is_some()),
                    ("read_only", t.read_only.is_some()),
                    ("description", t.description.is_some()),
                    ("input_schema", t.input_schema.is_some()),
                ]
                .into_iter()
                .filter_map(|(key, set)| set.then_some(key))
                .collect();
                if !given.is_empty() {
                    let message = format!(
                        "{} is for function components and command programs; {name} is a toolhost tool, which says this itself",
                        given.join(", ")
                    );
                    return Err(config_error(self.config.tool_error(&name, &message)));
                }
            } else {
                info.read_only = t.read_only.unwrap_or(false);
                if let Some(description) = &t.description {
                    info.description = description.clone();
                }
                match (&t.input_schema, &info.kind) {
                    (Some(extension), ToolKind::Command) => {
                        let (schema, checks) = crate::kinds::command::extended(&info.input_schema, extension)
                            .map_err(|m| config_error(self.config.tool_error(&name, &m)))?;
                        info.input_schema = schema;
                        validator = checks;
                    }
                    (Some(_), _) => {
                        let message = "input_schema is for command programs; a function's schema is its WIT types'";
                        return Err(config_error(self.config.tool_error(&name, message)));
                    }
                    (None, _) => {}
                }
            }
        }
        if let Some(pin) = tool_config.and_then(|t| t.sha256.as_ref())
            && !pin.get_ref().eq_ignore_ascii_case(code.sha256())
        {
            return Err(load_error(LoadError::Sha256Mismatch {
                tool: Some(name),
                expected: pin.get_ref().clone(),
                actual: code.sha256().to_string(),
            }));
        }
        let policy_file = match &source.policy_file {
            Some(file) => Some(file.grant.as_ref().map_err(|e| load_error(LoadError::PolicyFile(e.clone())))?),
            None => None,
        };
        let resolved = resolve_grant(&GrantInputs {
            info: &info,
            config: &self.config,
            default_grant: &self.default_grant,
            workspace: &self.workspace,
            working_dirs: &self.permissions.rules.working_dirs,
            cache: self.cache.as_ref(),
            state_dir: self.state_dir.as_deref(),
            deny_rules: &self.permissions.rules.deny,
            shared_refuses_reads: self.fs_policy.refuses_reads(),
            hook_paths: &self.hook_paths,
            policy_file,
        })
        .map_err(load_error)?;
        if let Origin::File(path) = &source.origin
            && let Ok(real) = path.canonicalize()
        {
            // Its policy file too, whether or not there is one (beside the path as named and
            // beside the real file): a tool that could write one would choose this tool's
            // grant at the next start.
            let named = toolhost_policy::policy_file_path(path).and_then(|p| {
                let dir = p.parent()?.canonicalize().ok()?;
                Some(dir.join(p.file_name()?))
            });
            for policy in named.into_iter().chain(toolhost_policy::policy_file_path(&real)) {
                // Its WIT beside it too: its doc comments become the tool's description.
                let wit = policy.with_file_name(format!(
                    "{}.wit",
                    policy
                        .file_name()
                        .and_then(|f| f.to_str())
                        .and_then(|f| f.strip_suffix(".policy.yaml"))
                        .unwrap_or("")
                ));
                let fs_policy = Arc::make_mut(&mut self.fs_policy);
                fs_policy.protect(policy, format!("the policy file of tool {name}"), false);
                fs_policy.protect(wit, format!("the WIT file of tool {name}"), false);
            }
            Arc::make_mut(&mut self.fs_policy).protect(real, format!("the file of tool {name}"), false);
        }
        let limits = self.config.limits_for(&name);
        let context_namespace: Arc<str> =
            Arc::from(source.context_namespace.clone().unwrap_or_else(|| crate::turns::session::tool_namespace(&name)));
        let ToolGrant { grant, from, effective, preopens, own_policy, check_reads, inside_workspace, mut warnings } =
            resolved;
        let policy_file = source.policy_file.as_ref().map(|p| p.path.clone());
        if let (ToolKind::Function { .. }, Some(wit)) = (&info.kind, &source.wit_docs)
            && let Err(why) = &wit.docs
        {
            warnings.push(format!("its WIT file {} gives no descriptions: {why}", wit.path.display()));
        }
        if let (Some(path), GrantFrom::Config) = (&policy_file, from) {
            warnings
                .push(format!("its policy file {} is not used: [tools.{name}] grant takes its place", path.display()));
        }
        let tool = LoadedTool {
            context_namespace,
            warnings,
            grant_inside_workspace: inside_workspace,
            info,
            origin: source.origin.clone(),
            sha256: code.sha256().to_string(),
            size: source.bytes.len(),
            grant,
            grant_from: from,
            policy_file,
            effective_read_only: effective.read_only(),
            net_patterns: crate::sandbox::net::compile_patterns(&effective.net),
            effective,
            limits,
            validator,
            preopens: preopens.into(),
            own_policy,
            check_reads,
            concurrency_safe: tool_config.and_then(|t| t.concurrency_safe).unwrap_or(false),
            code,
            pure_pool: Default::default(),
            remote: None,
        };
        self.pool.insert_component(name.clone(), Arc::new(tool));
        Ok(name)
    }
}
