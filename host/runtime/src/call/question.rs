//! A tool's own question to the person (`toolhost:session/session.elicit`) and its log
//! messages (`session.log`). A question is a message and a form; the host checks the form is
//! one MCP's form elicitation allows (flat, primitive fields) before anyone sees it, bounds its
//! size and the number asked per call, and checks an accepted answer against the form before
//! the tool gets it. Who answers is the call's [`crate::PermissionDecider`]: an MCP client
//! that can be asked, a terminal, or nobody (then the answer is `cancel`).

use serde::Serialize;
use serde_json::{Map, Value};

/// The most questions one call may ask.
pub const MAX_QUESTIONS: u32 = 8;
/// The longest message a question may carry, in characters.
pub const MAX_QUESTION_CHARS: usize = 4096;
/// The largest form, as JSON text.
pub const MAX_FORM_BYTES: usize = 64 * 1024;
/// The most fields one form may have.
pub const MAX_FIELDS: usize = 32;

/// How severe a tool's log message is (the syslog levels, as MCP names them), least first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// Ordinary information.
    Info,
    /// Normal but significant.
    Notice,
    /// Something may be wrong.
    Warning,
    /// Something failed.
    Error,
    /// A part stopped working.
    Critical,
    /// Someone must act at once.
    Alert,
    /// Nothing works.
    Emergency,
}

impl LogLevel {
    /// The level's name, as MCP and syslog spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

/// One question of a running call, already checked.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Question {
    /// The asking call's tool_use id.
    pub tool_use_id: String,
    /// The asking tool.
    pub tool: String,
    /// What the tool asks, as it wrote it (at most `MAX_QUESTION_CHARS` characters). Show it
    /// with the tool's name: the person must know a tool asks, not toolhost.
    pub message: String,
    /// The form: a JSON Schema object of primitive fields.
    pub form: Map<String, Value>,
}

/// Why a question is not put to the person, or its answer not passed on: said to the tool (or
/// the MCP server) that asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QuestionError {
    /// The call asked [`MAX_QUESTIONS`] already.
    #[error("a call may ask at most {MAX_QUESTIONS} questions")]
    TooMany,
    /// The message is over `MAX_QUESTION_CHARS` (4,096) characters.
    #[error("the question is longer than {MAX_QUESTION_CHARS} characters")]
    TooLong,
    /// The message is empty or white space.
    #[error("the question has no message")]
    NoMessage,
    /// The form is over `MAX_FORM_BYTES` (64 KiB).
    #[error("the form is larger than {MAX_FORM_BYTES} bytes")]
    FormTooLarge,
    /// The form is not JSON.
    #[error("the form is not JSON: {0}")]
    FormNotJson(String),
    /// The form is JSON but not a form toolhost puts to a person (a key, a field type or a
    /// count it does not take): what is wrong with it.
    #[error("{0}")]
    NotAForm(String),
    /// An accepted answer does not fit the form: where and why.
    #[error("the answer does not fit the form: {0}")]
    AnswerDoesNotFit(String),
}

impl Question {
    /// A tool's question, if its message and form are acceptable; `Err` says why not (to the
    /// tool).
    ///
    /// # Errors
    ///
    /// The message is empty or too long, or the form is not JSON, too large, or not a form.
    pub fn new(tool_use_id: &str, tool: &str, message: String, form: &str) -> Result<Question, QuestionError> {
        if message.chars().count() > MAX_QUESTION_CHARS {
            return Err(QuestionError::TooLong);
        }
        if message.trim().is_empty() {
            return Err(QuestionError::NoMessage);
        }
        if form.len() > MAX_FORM_BYTES {
            return Err(QuestionError::FormTooLarge);
        }
        let form: Value = serde_json::from_str(form).map_err(|e| QuestionError::FormNotJson(e.to_string()))?;
        let form = check_form(form).map_err(QuestionError::NotAForm)?;
        Ok(Question { tool_use_id: tool_use_id.to_string(), tool: tool.to_string(), message, form })
    }

    /// The message as a person should see it: which tool asks, then what it asks.
    pub fn shown(&self) -> String {
        format!("Tool {} asks: {}", self.tool, self.message)
    }

    /// `content` (an accepted answer) if it fits the form: an object with the required fields,
    /// each of its field's type and choices.
    ///
    /// # Errors
    ///
    /// [`QuestionError::AnswerDoesNotFit`]: where and why (also when the form itself cannot
    /// check answers, which [`Question::new`]'s checks leave no way to reach).
    pub fn check_answer(&self, content: &Value) -> Result<(), QuestionError> {
        let validator = jsonschema::validator_for(&Value::Object(self.form.clone()))
            .map_err(|e| QuestionError::AnswerDoesNotFit(format!("the form cannot check answers: {e}")))?;
        match validator.iter_errors(content).next() {
            None => Ok(()),
            Some(e) => Err(QuestionError::AnswerDoesNotFit(format!("{e} (at {})", e.instance_path()))),
        }
    }
}

/// What the person did with a question.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// They filled in the form: the values, an object that fits it.
    Accept(Map<String, Value>),
    /// They refused to answer.
    Decline,
    /// They dismissed it, or nobody could be asked.
    Cancel,
}

/// Keywords a field may carry (MCP's primitive schema definitions and their enum forms).
const FIELD_KEYWORDS: &[&str] = &[
    "type",
    "title",
    "description",
    "default",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "enum",
    "enumNames",
    "oneOf",
    "items",
    "minItems",
    "maxItems",
    "uniqueItems",
];

/// `form` if it is a flat object schema of primitive fields.
fn check_form(form: Value) -> Result<Map<String, Value>, String> {
    let Value::Object(form) = form else { return Err("the form is not a JSON object".to_string()) };
    for key in form.keys() {
        if !["type", "properties", "required", "title", "description", "$schema"].contains(&key.as_str()) {
            return Err(format!("the form has `{key}`, which a form may not have"));
        }
    }
    if form.get("type").and_then(Value::as_str) != Some("object") {
        return Err("the form's `type` is not \"object\"".to_string());
    }
    let Some(Value::Object(fields)) = form.get("properties") else {
        return Err("the form has no `properties` object".to_string());
    };
    if fields.len() > MAX_FIELDS {
        return Err(format!("the form has more than {MAX_FIELDS} fields"));
    }
    for (name, field) in fields {
        check_field(field).map_err(|why| format!("field `{name}`: {why}"))?;
    }
    if let Some(required) = form.get("required") {
        let Some(required) = required.as_array() else { return Err("`required` is not an array".to_string()) };
        for name in required {
            match name.as_str() {
                Some(name) if fields.contains_key(name) => {}
                _ => return Err(format!("`required` names {name}, which is not a field")),
            }
        }
    }
    // It must also be a schema the validator accepts (patterns compile, bounds are numbers).
    jsonschema::validator_for(&Value::Object(form.clone()))
        .map_err(|e| format!("the form is not a valid schema: {e}"))?;
    Ok(form)
}

fn check_field(field: &Value) -> Result<(), String> {
    let Value::Object(field) = field else { return Err("not an object".to_string()) };
    for key in field.keys() {
        if !FIELD_KEYWORDS.contains(&key.as_str()) {
            return Err(format!("`{key}` is not allowed in a form field"));
        }
    }
    match field.get("type").and_then(Value::as_str) {
        Some("string" | "number" | "integer" | "boolean") => {
            if field.contains_key("items") {
                return Err("`items` on a single value".to_string());
            }
            if let Some(one_of) = field.get("oneOf") {
                check_choices(one_of)?;
            }
            Ok(())
        }
        Some("array") => {
            let Some(Value::Object(items)) = field.get("items") else {
                return Err("a multiple choice needs `items`".to_string());
            };
            for key in items.keys() {
                if !["type", "enum", "anyOf"].contains(&key.as_str()) {
                    return Err(format!("`items` may not have `{key}`"));
                }
            }
            match (items.get("enum"), items.get("anyOf")) {
                (Some(Value::Array(_)), None) => Ok(()),
                (None, Some(any_of)) => check_choices(any_of),
                _ => Err("a multiple choice's `items` needs `enum` or `anyOf`".to_string()),
            }
        }
        Some(other) => Err(format!("type `{other}` is not a form field's (string, number, integer, boolean, array)")),
        None => Err("no `type`".to_string()),
    }
}

/// `oneOf` / `anyOf` of a titled choice: `{const, title}` items only.
fn check_choices(choices: &Value) -> Result<(), String> {
    let Some(choices) = choices.as_array() else { return Err("choices are not an array".to_string()) };
    for choice in choices {
        let Value::Object(choice) = choice else { return Err("a choice is not an object".to_string()) };
        if !choice.contains_key("const") || choice.keys().any(|k| k != "const" && k != "title") {
            return Err("a choice has other keys than `const` and `title`".to_string());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn ask(form: Value) -> Result<Question, String> {
        Question::new("toolu_1", "Asker", "Who are you?".into(), &form.to_string()).map_err(|e| e.to_string())
    }

    #[test]
    fn forms_of_primitive_fields_pass_and_anything_deeper_is_refused() {
        let good = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "minimum": 0},
            "status": {"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]},
            "titled": {"type": "string", "oneOf": [{"const": "v1", "title": "First"}]},
            "many": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}, "minItems": 1},
            "titledMany": {"type": "array", "items": {"anyOf": [{"const": "v1", "title": "First"}]}},
            "ok": {"type": "boolean", "default": true}
        }, "required": ["name"]});
        assert!(ask(good).is_ok());
        for (bad, why) in [
            (json!([1]), "not a JSON object"),
            (json!({"type": "object"}), "no `properties`"),
            (json!({"type": "object", "properties": {"a": {"type": "object"}}}), "type `object`"),
            (json!({"type": "object", "properties": {"a": {"type": "string", "$ref": "#"}}}), "`$ref`"),
            (json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}), "not a field"),
            (json!({"type": "object", "properties": {}, "$defs": {}}), "`$defs`"),
            (json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}}), "valid schema"),
            (json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}}), "`enum`"),
        ] {
            let err = ask(bad.clone()).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
        let many: Map<String, Value> = (0..=MAX_FIELDS).map(|i| (format!("f{i}"), json!({"type": "string"}))).collect();
        assert!(ask(json!({"type": "object", "properties": many})).unwrap_err().contains("more than"));
    }

    #[test]
    fn messages_are_bounded_and_answers_checked_against_the_form() {
        let form = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}).to_string();
        let long = "x".repeat(MAX_QUESTION_CHARS + 1);
        assert_eq!(Question::new("t", "T", long, &form).unwrap_err(), QuestionError::TooLong);
        assert_eq!(Question::new("t", "T", " ".into(), &form).unwrap_err(), QuestionError::NoMessage);
        let q = Question::new("t", "T", "n?".into(), &form).unwrap();
        assert_eq!(q.shown(), "Tool T asks: n?");
        assert!(q.check_answer(&json!({"n": 3})).is_ok());
        let wrong = q.check_answer(&json!({"n": "three"})).unwrap_err();
        assert!(matches!(&wrong, QuestionError::AnswerDoesNotFit(why) if why.contains("/n")), "{wrong}");
        assert!(matches!(q.check_answer(&json!({})), Err(QuestionError::AnswerDoesNotFit(_))));
    }

    /// Any JSON, its object keys mostly schema keywords, so that generated forms come near
    /// the accepted shape from every side.
    fn json() -> impl Strategy<Value = Value> {
        let key = prop_oneof![
            4 => prop::sample::select(vec![
                "type", "properties", "required", "items", "enum", "enumNames", "oneOf", "anyOf", "const",
                "title", "default", "pattern", "$ref", "$defs", "minimum", "format", "additionalProperties",
            ]).prop_map(str::to_string),
            1 => "[a-z]{1,3}",
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            prop::sample::select(vec!["object", "string", "integer", "number", "boolean", "array", "a", "(", "^a+$"])
                .prop_map(Value::from),
        ];
        leaf.prop_recursive(5, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(key.clone(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// A field near the accepted shape: a type (object included), then a few keywords of any
    /// value, and for a multiple choice `items` that may or may not hold choices.
    fn near_field() -> impl Strategy<Value = Value> {
        let kind = prop::sample::select(vec!["string", "integer", "number", "boolean", "array", "object", "null"]);
        let keyword = prop::sample::select(vec![
            "title",
            "description",
            "default",
            "enum",
            "enumNames",
            "oneOf",
            "minimum",
            "maxLength",
            "pattern",
            "format",
            "properties",
            "$ref",
            "items",
            "const",
        ]);
        let items = prop_oneof![
            Just(json!({"type": "string", "enum": ["a", "b"]})),
            Just(json!({"anyOf": [{"const": "a", "title": "A"}]})),
            Just(json!({"anyOf": [{"const": "a", "title": "A", "x": 1}]})),
            Just(json!({"type": "object", "properties": {}})),
            json(),
        ];
        (kind, prop::collection::vec((keyword, json()), 0..3), prop::option::of(items)).prop_map(
            |(kind, extra, items)| {
                let mut field = Map::new();
                field.insert("type".into(), json!(kind));
                for (k, v) in extra {
                    field.insert(k.to_string(), v);
                }
                if let Some(items) = items {
                    field.insert("items".into(), items);
                }
                Value::Object(field)
            },
        )
    }

    /// A field a form may have: a primitive (maybe with choices) or a multiple choice.
    fn good_field() -> impl Strategy<Value = Value> {
        let kind = prop::sample::select(vec!["string", "integer", "number", "boolean"]);
        prop_oneof![
            (kind, prop::option::of(".{0,8}")).prop_map(|(kind, title)| match title {
                Some(t) => json!({"type": kind, "title": t}),
                None => json!({"type": kind}),
            }),
            prop::collection::vec(".{0,4}", 1..4).prop_map(|c| json!({"type": "string", "enum": c})),
            prop::collection::vec(".{0,4}", 1..4)
                .prop_map(|c| json!({"type": "array", "items": {"type": "string", "enum": c}, "minItems": 1})),
            prop::collection::vec(".{0,4}", 1..4).prop_map(|c| {
                json!({"type": "string", "oneOf": c.iter().map(|c| json!({"const": c, "title": c})).collect::<Vec<_>>()})
            }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Whatever a tool sends as a form, the check never panics, and what it accepts is a
        /// flat object of primitive fields or multiple choices, at most [`MAX_FIELDS`] of them,
        /// that can check an answer.
        #[test]
        fn only_flat_forms_of_primitive_fields_are_accepted(
            body in json(),
            fields in prop_oneof![0..6usize, 30..36usize].prop_flat_map(|n| prop::collection::btree_map(
                "[a-z]{1,3}",
                prop_oneof![30 => good_field(), 1 => near_field(), 1 => json()],
                n,
            )),
            shape in 0..3u8,
        ) {
            let form = match shape {
                0 => body,
                1 => json!({"type": "object", "properties": body}),
                _ => json!({"type": "object", "properties": fields}),
            };
            let Ok(question) = Question::new("t", "T", "?".into(), &form.to_string()) else { return Ok(()) };
            let fields = question.form["properties"].as_object().unwrap();
            prop_assert!(fields.len() <= MAX_FIELDS);
            for field in fields.values() {
                let kind = field["type"].as_str().unwrap();
                prop_assert!(["string", "number", "integer", "boolean", "array"].contains(&kind));
                prop_assert!(field.get("properties").is_none() && field.get("$ref").is_none());
                if kind == "array" {
                    let items = field["items"].as_object().unwrap();
                    prop_assert!(items.keys().all(|k| ["type", "enum", "anyOf"].contains(&k.as_str())));
                }
            }
            // Checking any answer ends with a verdict, never a panic.
            let _ = question.check_answer(&body_or_empty(&form));
        }
    }

    proptest! {
        /// And the check refuses nothing MCP's forms allow: any form of allowed fields is
        /// accepted up to [`MAX_FIELDS`] fields, and refused past it.
        #[test]
        fn every_form_of_allowed_fields_is_accepted_up_to_the_limit(
            fields in prop::collection::btree_map("[a-z]{1,3}", good_field(), 0..40),
        ) {
            let n = fields.len();
            let form = json!({"type": "object", "properties": fields, "required": fields.keys().take(2).collect::<Vec<_>>()});
            let asked = Question::new("t", "T", "?".into(), &form.to_string());
            prop_assert_eq!(asked.is_ok(), n <= MAX_FIELDS, "{} fields: {:?}", n, asked.err());
        }
    }

    fn body_or_empty(v: &Value) -> Value {
        v.get("properties").cloned().unwrap_or_else(|| json!({}))
    }
}
