//! A function component's tools: one per exported function (at the top level or in an
//! exported interface), described from the component's types (the input schema, by the rules
//! of [`super::wit_schema`]) and its WIT documentation (the description), without running any
//! of its code.

use super::{ToolKind, wit_schema};
use crate::error::{LoadError, SchemaError};
use crate::loading::loader::{Described, ToolInfo};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;
use wasmtime::Engine;
use wasmtime::component::types::{ComponentFunc, ComponentItem};
use wasmtime::component::{Component, ComponentExportIndex, Func, Instance};

/// Where a function is among a component's exports.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FunctionExport {
    /// The exported interface holding it (`test:fns/kinds@0.1.0`, or a plain name for an
    /// interface the world exports by name); `None` for a function the world exports itself.
    pub interface: Option<String>,
    /// The function's name.
    pub function: String,
}

impl FunctionExport {
    /// The interface's own name: `kinds` for `test:fns/kinds@0.1.0`.
    pub fn interface_name(&self) -> Option<&str> {
        self.interface.as_deref().map(short_name)
    }

    /// Whether `spec` names this function: as `FUNCTION` (a top-level one), or as
    /// `INTERFACE#FUNCTION` with the interface's full or short name.
    pub fn matches(&self, spec: &str) -> bool {
        match (spec.split_once('#'), &self.interface) {
            (None, None) => spec == self.function,
            (Some((iface, f)), Some(full)) => f == self.function && (iface == full || iface == short_name(full)),
            _ => false,
        }
    }

    /// The function in an instance of the component.
    pub(crate) fn func(&self, instance: &Instance, mut store: impl wasmtime::AsContextMut) -> Option<Func> {
        let index = self.index(instance, &mut store)?;
        instance.get_func(&mut store, index)
    }

    fn index(&self, instance: &Instance, mut store: impl wasmtime::AsContextMut) -> Option<ComponentExportIndex> {
        match &self.interface {
            None => instance.get_export_index(&mut store, None, &self.function),
            Some(iface) => {
                let parent = instance.get_export_index(&mut store, None, iface)?;
                instance.get_export_index(&mut store, Some(&parent), &self.function)
            }
        }
    }
}

impl std::fmt::Display for FunctionExport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.interface {
            Some(iface) => write!(f, "{iface}#{}", self.function),
            None => f.write_str(&self.function),
        }
    }
}

/// One function, described (what a load record keeps of it).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct FunctionRecord {
    pub(crate) export: FunctionExport,
    /// Its default tool name: the function's name, or `INTERFACE_FUNCTION` when another
    /// exported function has the same name (WIT names never contain `_`, and model APIs
    /// refuse `.` in tool names).
    pub(crate) name: String,
    /// Its documentation, when the component carries it (`package-docs`).
    pub(crate) description: Option<String>,
    /// The input schema (JSON text).
    pub(crate) input_schema: String,
    /// Why it cannot be a tool, if it cannot (a resource parameter, an async function).
    pub(crate) refused: Option<String>,
}

/// Every function `component` exports, described; `bytes` are its bytes, for documentation.
pub(crate) fn describe(engine: &Engine, component: &Component, bytes: &[u8]) -> Vec<FunctionRecord> {
    let docs = docs(bytes);
    let found = exported(engine, component);
    let mut uses: HashMap<&str, usize> = HashMap::new();
    for (export, _) in &found {
        *uses.entry(export.function.as_str()).or_default() += 1;
    }
    found
        .iter()
        .map(|(export, f)| {
            // A resource's functions are `[static]counter.make` and the like.
            let bare = export.function.rsplit_once(']').map_or(export.function.as_str(), |(_, f)| f).replace('.', "_");
            let name = match export.interface_name() {
                Some(iface) if uses[export.function.as_str()] > 1 => format!("{iface}_{bare}"),
                _ => bare,
            };
            let description = lookup(&docs, export);
            let valid = crate::loading::loader::valid_tool_name(&name);
            let mut input_schema = wit_schema::params_schema(f.params()).to_string();
            let too_big = input_schema.len() > MAX_SCHEMA_BYTES;
            let refused = refusal(export, f)
                .or_else(|| {
                    (!valid).then(|| {
                        format!(
                            "function `{export}`: {name:?} cannot be a tool name (1-64 characters from [A-Za-z0-9_-])"
                        )
                    })
                })
                .or_else(|| {
                    // Types may share parts, so a small component can describe a huge schema;
                    // no model reads one of this size.
                    too_big.then(|| {
                        format!(
                            "function `{export}`: its input schema would be {} bytes, more than {MAX_SCHEMA_BYTES}",
                            input_schema.len()
                        )
                    })
                });
            if too_big {
                // Not kept in the load record: the refusal says all there is to say.
                input_schema = String::from("{}");
            }
            FunctionRecord { refused, input_schema, export: export.clone(), name, description }
        })
        .collect()
}

/// The tools of the described functions (or why a function cannot be one). A function the
/// component does not document takes its description from `docs` (the WIT beside the
/// component), or a generic one.
pub(crate) fn described(functions: Vec<FunctionRecord>, docs: &Docs) -> Vec<Described> {
    functions
        .into_iter()
        .map(|f| {
            if let Some(why) = f.refused {
                return Err(LoadError::Unsupported { export: f.export.to_string(), why });
            }
            let input_schema: serde_json::Value = serde_json::from_str(&f.input_schema)
                .map_err(|e| LoadError::Schema(SchemaError::NotJson { tool: f.name.clone(), error: Arc::new(e) }))?;
            let validator = jsonschema::validator_for(&input_schema).map_err(|e| {
                LoadError::Schema(SchemaError::NotASchema { tool: f.name.clone(), message: e.to_string() })
            })?;
            let description = f.description.or_else(|| lookup(docs, &f.export)).unwrap_or_else(|| {
                format!("Calls the function `{}` of this component (it documents nothing).", f.export)
            });
            let info = ToolInfo {
                name: f.name,
                description,
                input_schema,
                permission_subject: None,
                read_only: false,
                capabilities: Vec::new(),
                kind: ToolKind::Function { export: f.export },
            };
            Ok((info, validator))
        })
        .collect()
}

/// Every function `component` exports, at the top level or in an exported interface, in the
/// order of its exports.
pub(crate) fn exported(engine: &Engine, component: &Component) -> Vec<(FunctionExport, ComponentFunc)> {
    let ty = component.component_type();
    let mut found: Vec<(FunctionExport, ComponentFunc)> = Vec::new();
    for (name, item) in ty.exports(engine) {
        match item.ty {
            ComponentItem::ComponentFunc(f) => {
                found.push((FunctionExport { interface: None, function: name.to_string() }, f));
            }
            ComponentItem::ComponentInstance(instance) => {
                // componentize-py's build-time initialisation hook, not a function of the program.
                if name == "exports" {
                    continue;
                }
                for (fname, item) in instance.exports(engine) {
                    if let ComponentItem::ComponentFunc(f) = item.ty {
                        let export = FunctionExport { interface: Some(name.to_string()), function: fname.to_string() };
                        found.push((export, f));
                    }
                }
            }
            _ => {}
        }
    }
    found
}

/// Why the function cannot be offered as a tool, if it cannot.
fn refusal(export: &FunctionExport, f: &ComponentFunc) -> Option<String> {
    if f.async_() {
        return Some(format!("function `{export}` is async, which toolhost does not call yet"));
    }
    for (param, ty) in f.params() {
        if let Some(what) = wit_schema::unsupported(&ty) {
            return Some(format!(
                "function `{export}`: parameter `{param}` is or holds {what}, which has no JSON form"
            ));
        }
    }
    for ty in f.results() {
        if let Some(what) = wit_schema::unsupported(&ty) {
            return Some(format!("function `{export}`: its result is or holds {what}, which has no JSON form"));
        }
    }
    None
}

/// The largest input schema derived for a function (JSON text).
const MAX_SCHEMA_BYTES: usize = 256 * 1024;

/// The most functions of one component offered as tools.
pub(crate) const MAX_FUNCTIONS: usize = 512;

/// The longest description kept from a component's documentation.
const MAX_DESCRIPTION: usize = 4096;

/// Each exported function's documentation.
pub(crate) type Docs = HashMap<FunctionExport, String>;

/// The documentation of each exported function, from the component's `package-docs` custom
/// section (what `wit-docs-inject`, which Wassette's builds run, and `wasm-tools` write: a
/// version byte, then JSON). Best effort: a component without one, or with one that does not
/// read, has none. Read here rather than through `wit-parser`'s decoder, which refuses the
/// whole component when the section's world names differ from the decoded ones.
pub(crate) fn docs(bytes: &[u8]) -> Docs {
    let mut out = HashMap::new();
    let Some(section) = super::sections::custom(bytes, "package-docs") else { return out };
    let (Some(0 | 1), Ok(json)) = (section.first(), serde_json::from_slice::<serde_json::Value>(&section[1..])) else {
        return out;
    };
    let text = |v: &serde_json::Value| {
        let docs = v.as_str().or_else(|| v.get("docs").and_then(serde_json::Value::as_str))?;
        Some(docs.trim()).filter(|d| !d.is_empty()).map(clip)
    };
    let maps = |v: &serde_json::Value, keys: &[&str]| -> Vec<(String, serde_json::Value)> {
        keys.iter()
            .filter_map(|k| v.get(*k).and_then(serde_json::Value::as_object))
            .flat_map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())))
            .collect()
    };
    let interface = |name: &str, meta: &serde_json::Value, out: &mut Docs| {
        let about = meta.get("docs").and_then(&text);
        for (function, f) in maps(meta, &["funcs"]) {
            let export = FunctionExport { interface: Some(name.to_string()), function: function.clone() };
            match (text(&f), &about) {
                (Some(d), _) => out.insert(export, d),
                (None, Some(about)) => out.insert(export, format!("`{function}` of: {about}")),
                (None, None) => None,
            };
        }
    };
    for (_, world) in maps(&json, &["worlds"]) {
        for (function, f) in maps(&world, &["func_exports", "funcs"]) {
            if let Some(d) = text(&f) {
                out.insert(FunctionExport { interface: None, function }, d);
            }
        }
        for (name, meta) in maps(&world, &["interface_exports", "interfaces"]) {
            interface(&name, &meta, &mut out);
        }
    }
    for (name, meta) in maps(&json, &["interfaces"]) {
        interface(&name, &meta, &mut out);
    }
    out
}

/// The largest WIT file read for documentation.
pub(crate) const MAX_WIT_BYTES: usize = 1 << 20;

/// The documentation of the functions exported by every world of a WIT document (the `.wit`
/// file beside a component, as its author wrote it: today's toolchains do not put the doc
/// comments into the component).
///
/// # Errors
///
/// The parser's message when the text is not a WIT package it can resolve on its own.
pub(crate) fn docs_from_wit(text: &str, path: &std::path::Path) -> Result<Docs, String> {
    let mut resolve = wit_parser::Resolve::new();
    let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| resolve.push_str(path, text)));
    let package = match parsed {
        Ok(Ok(package)) => package,
        // Most often an import of a package the file does not hold (`wasi:http`, kept in a
        // `deps/` directory beside the author's WIT): the docs are all in this package, so it
        // is read without resolving what it imports.
        Ok(Err(e)) => return unresolved_docs(text, path).ok_or_else(|| format!("{e:#}")),
        Err(_) => return Err("the WIT parser failed on it".to_string()),
    };
    let mut out = HashMap::new();
    for world in resolve.packages[package].worlds.values() {
        let name = |id: wit_parser::InterfaceId| resolve.id_of(id);
        world_docs(&resolve.worlds[*world], &resolve.interfaces, &name, &mut out);
    }
    Ok(out)
}

/// The docs of the package in `text`, parsed but not resolved (its imports from other packages
/// left unknown); `None` when it does not even parse.
fn unresolved_docs(text: &str, path: &std::path::Path) -> Option<Docs> {
    let parsed = std::panic::catch_unwind(|| wit_parser::UnresolvedPackageGroup::parse(path, text)).ok()?.ok()?;
    let package = &parsed.main;
    let version = package.name.version.as_ref().map(|v| format!("@{v}")).unwrap_or_default();
    let name = |id: wit_parser::InterfaceId| {
        let iface = package.interfaces[id].name.as_ref()?;
        Some(format!("{}:{}/{iface}{version}", package.name.namespace, package.name.name))
    };
    let mut out = HashMap::new();
    for (_, world) in package.worlds.iter() {
        world_docs(world, &package.interfaces, &name, &mut out);
    }
    Some(out)
}

fn world_docs(
    world: &wit_parser::World,
    interfaces: &dyn std::ops::Index<wit_parser::InterfaceId, Output = wit_parser::Interface>,
    interface_name: &dyn Fn(wit_parser::InterfaceId) -> Option<String>,
    out: &mut Docs,
) {
    use wit_parser::{WorldItem, WorldKey};
    let text = |docs: &wit_parser::Docs| docs.contents.as_deref().map(str::trim).filter(|d| !d.is_empty()).map(clip);
    for (key, item) in &world.exports {
        match item {
            WorldItem::Function(f) => {
                if let Some(d) = text(&f.docs) {
                    out.insert(FunctionExport { interface: None, function: f.name.clone() }, d);
                }
            }
            WorldItem::Interface { id, docs, .. } => {
                let name = match key {
                    WorldKey::Name(name) => Some(name.clone()),
                    WorldKey::Interface(id) => interface_name(*id),
                };
                let Some(name) = name else { continue };
                let iface = &interfaces[*id];
                let about = text(&iface.docs).or_else(|| text(docs));
                for (fname, f) in &iface.functions {
                    let export = FunctionExport { interface: Some(name.clone()), function: fname.clone() };
                    let d = match (text(&f.docs), &about) {
                        (Some(d), _) => d,
                        (None, Some(about)) => format!("`{fname}` of: {about}"),
                        (None, None) => continue,
                    };
                    out.insert(export, d);
                }
            }
            WorldItem::Type { .. } => {}
        }
    }
}

/// A function's docs, found by its interface's full name or its own name (`package-docs`
/// names interfaces within their package).
fn lookup(docs: &Docs, export: &FunctionExport) -> Option<String> {
    docs.get(export).cloned().or_else(|| {
        let short = FunctionExport {
            interface: export.interface_name().map(str::to_string),
            function: export.function.clone(),
        };
        docs.get(&short).cloned()
    })
}

/// A description as shown: lines its author continued with a trailing `\` (as Wassette's WIT
/// files do) joined, and at most [`MAX_DESCRIPTION`] characters.
fn clip(text: &str) -> String {
    let mut joined = String::with_capacity(text.len());
    for line in text.lines() {
        match line.trim_end().strip_suffix('\\') {
            Some(continued) => {
                joined.push_str(continued.trim_end());
                joined.push(' ');
            }
            None => {
                joined.push_str(line);
                joined.push('\n');
            }
        }
    }
    let text = joined.trim_end();
    match text.char_indices().nth(MAX_DESCRIPTION) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// `kinds` for `test:fns/kinds@0.1.0`.
fn short_name(interface: &str) -> &str {
    let base = interface.split_once('@').map_or(interface, |(b, _)| b);
    base.rsplit_once('/').map_or(base, |(_, n)| n)
}
