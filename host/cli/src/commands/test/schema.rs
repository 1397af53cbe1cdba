//! Checks of a tool's schema that run no guest code: the draft it declares, an object at the
//! top (what model APIs require), descriptions where the model needs them, and every
//! `examples` and `default` value inside it against the part of the schema it belongs to.

use super::report::Finding;
use serde_json::{Map, Value, json};

/// The draft toolhost validates with, and tells models.
const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// Every finding about `description` and `schema`, and the top-level examples that pass (to
/// be called like generated inputs).
pub fn check(description: &str, schema: &Value) -> (Vec<Finding>, Vec<Value>) {
    let mut findings = Vec::new();
    if description.trim().is_empty() {
        findings.push(Finding::error(
            "descriptions",
            "the tool has no description",
            "say what the tool does and when to use it: the model chooses tools by their description",
        ));
    }
    if let Some(declared) = schema.get("$schema").and_then(Value::as_str)
        && declared.trim_end_matches('#') != DRAFT_2020_12
    {
        findings.push(Finding::warning(
            "schema",
            format!("the schema declares {declared}"),
            format!("declare {DRAFT_2020_12} (or nothing): model APIs read tool schemas as draft 2020-12"),
        ));
    }
    if schema.get("type") != Some(&json!("object")) {
        findings.push(Finding::error(
            "schema",
            "the input schema's top level is not `\"type\": \"object\"`",
            "make the input an object with named properties: model APIs refuse other tool schemas",
        ));
    }
    let mut missing = Vec::new();
    undescribed(schema, "", &mut missing);
    if !missing.is_empty() {
        findings.push(Finding::warning(
            "descriptions",
            format!(
                "{} propert{} without a description: {}",
                missing.len(),
                if missing.len() == 1 { "y" } else { "ies" },
                missing.join(", ")
            ),
            "add a `description` to each (in Rust, a doc comment on the field): the model fills in inputs from them",
        ));
    }
    let mut examples = Vec::new();
    let mut annotated = Vec::new();
    annotations(schema, "", &mut annotated);
    for (pointer, keyword, value) in annotated {
        let at = if pointer.is_empty() { "the schema".to_string() } else { pointer.clone() };
        match validator_at(schema, &pointer) {
            Ok(v) => {
                let errors: Vec<String> =
                    v.iter_errors(&value).map(|e| format!("{}: {e}", e.instance_path())).collect();
                if errors.is_empty() {
                    if pointer.is_empty() && keyword == "examples" {
                        examples.push(value);
                    }
                } else {
                    findings.push(
                        Finding::error(
                            "examples",
                            format!("a `{keyword}` value of {at} breaks its own schema: {}", errors.join("; ")),
                            "correct the value or the schema: models copy examples, and a default the schema refuses is never usable",
                        )
                        .with_input(value),
                    );
                }
            }
            Err(e) => findings.push(Finding::warning(
                "examples",
                format!("the `{keyword}` of {at} could not be checked: {e}"),
                "keep examples beside schemas toolhost can compile on their own",
            )),
        }
    }
    (findings, examples)
}

/// JSON pointers of object properties (in `properties`, anywhere in the schema) that have no
/// `description`, directly or through the definition they refer to.
fn undescribed(schema: &Value, at: &str, out: &mut Vec<String>) {
    let Some(obj) = schema.as_object() else { return };
    if let Some(props) = obj.get("properties").and_then(Value::as_object) {
        for (name, sub) in props {
            let described = sub.get("description").and_then(Value::as_str).is_some_and(|d| !d.trim().is_empty())
                || sub.get("title").is_some_and(Value::is_string);
            if !described {
                out.push(format!("{at}/properties/{}", escape(name)));
            }
        }
    }
    for (k, v) in obj {
        match v {
            Value::Object(_) if k != "properties" && k != "const" && k != "default" && k != "enum" => {
                undescribed(v, &format!("{at}/{}", escape(k)), out)
            }
            Value::Object(props) if k == "properties" => {
                for (name, sub) in props {
                    undescribed(sub, &format!("{at}/properties/{}", escape(name)), out);
                }
            }
            Value::Array(items) if matches!(k.as_str(), "anyOf" | "oneOf" | "allOf" | "prefixItems") => {
                for (i, sub) in items.iter().enumerate() {
                    undescribed(sub, &format!("{at}/{k}/{i}"), out);
                }
            }
            _ => {}
        }
    }
}

/// Every `examples` entry and `default` in the schema: (pointer of its subschema, keyword,
/// value).
fn annotations(schema: &Value, at: &str, out: &mut Vec<(String, &'static str, Value)>) {
    let Some(obj) = schema.as_object() else { return };
    if let Some(examples) = obj.get("examples").and_then(Value::as_array) {
        out.extend(examples.iter().map(|e| (at.to_string(), "examples", e.clone())));
    }
    if let Some(d) = obj.get("default") {
        out.push((at.to_string(), "default", d.clone()));
    }
    for (k, v) in obj {
        if matches!(k.as_str(), "examples" | "default" | "const" | "enum") {
            continue;
        }
        match v {
            Value::Object(m) if matches!(k.as_str(), "properties" | "$defs" | "definitions" | "patternProperties") => {
                for (name, sub) in m {
                    annotations(sub, &format!("{at}/{}/{}", escape(k), escape(name)), out);
                }
            }
            Value::Object(_) => annotations(v, &format!("{at}/{}", escape(k)), out),
            Value::Array(items) => {
                for (i, sub) in items.iter().enumerate() {
                    annotations(sub, &format!("{at}/{}/{i}", escape(k)), out);
                }
            }
            _ => {}
        }
    }
}

/// A validator for the subschema at `pointer`, its references still resolving against the
/// whole document: the document's definitions are copied beside it.
fn validator_at(root: &Value, pointer: &str) -> Result<jsonschema::Validator, String> {
    if pointer.is_empty() {
        return jsonschema::validator_for(root).map_err(|e| e.to_string());
    }
    let sub = root.pointer(pointer).ok_or("no such subschema")?;
    let mut wrapper = Map::new();
    for defs in ["$defs", "definitions"] {
        if let Some(d) = root.get(defs) {
            wrapper.insert(defs.into(), d.clone());
        }
    }
    wrapper.insert("$schema".into(), root.get("$schema").cloned().unwrap_or(json!(DRAFT_2020_12)));
    wrapper.insert("allOf".into(), json!([sub]));
    jsonschema::validator_for(&Value::Object(wrapper)).map_err(|e| e.to_string())
}

fn escape(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_are_checked_where_they_stand() {
        let schema = json!({
            "type": "object",
            "properties": {
                "n": {"description": "a count", "$ref": "#/$defs/Count", "examples": [3, "three"]},
                "s": {"type": "string", "default": 4}
            },
            "examples": [{"n": 1}, {"n": -1}],
            "$defs": {"Count": {"type": "integer", "minimum": 0}}
        });
        let (findings, examples) = check("Counts.", &schema);
        let errors: Vec<&str> = findings.iter().filter(|f| f.check == "examples").map(|f| f.message.as_str()).collect();
        assert_eq!(errors.len(), 3, "{errors:#?}");
        assert!(errors.iter().any(|m| m.contains("/properties/n") && m.contains("three")), "{errors:#?}");
        assert!(errors.iter().any(|m| m.contains("default") && m.contains("/properties/s")), "{errors:#?}");
        assert_eq!(examples, vec![json!({"n": 1})]);
        let described: Vec<&str> =
            findings.iter().filter(|f| f.check == "descriptions").map(|f| f.message.as_str()).collect();
        assert_eq!(described, vec!["1 property without a description: /properties/s"]);
    }

    #[test]
    fn a_schema_that_is_not_an_object_is_an_error() {
        let (findings, _) = check("", &json!({"type": "string"}));
        let checks: Vec<&str> = findings.iter().map(|f| f.check).collect();
        assert_eq!(checks, vec!["descriptions", "schema"]);
    }
}
