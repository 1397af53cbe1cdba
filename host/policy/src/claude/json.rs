//! A settings file's JSON, read with the position of every value.
//!
//! Claude Code reads its settings with `JSON.parse`, so comments, trailing commas and the other
//! JSON5 liberties are errors here too. Each value keeps its byte range, so that a malformed
//! rule or an unknown key is reported at its file, line and column.

use super::Origin;
use crate::config::line_col;
use jsonc_parser::ast::{ObjectPropName, Value};
use jsonc_parser::{CollectOptions, ParseOptions};
use std::path::Path;

/// The parsed document, or the position and reason of the first syntax error.
pub(super) fn parse<'a>(text: &'a str) -> Result<Option<Value<'a>>, (usize, String)> {
    let strict = ParseOptions {
        allow_comments: false,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &strict)
        .map(|r| r.value)
        .map_err(|e| (e.range().start, e.kind().to_string()))
}

/// The name of a property (always a string in strict JSON).
pub(super) fn name<'v>(name: &'v ObjectPropName<'_>) -> &'v str {
    match name {
        ObjectPropName::String(s) => s.value.as_ref(),
        ObjectPropName::Word(w) => w.value,
    }
}

/// Where a value starts.
pub(super) fn start(value: &Value<'_>) -> usize {
    match value {
        Value::StringLit(v) => v.range.start,
        Value::NumberLit(v) => v.range.start,
        Value::BooleanLit(v) => v.range.start,
        Value::Object(v) => v.range.start,
        Value::Array(v) => v.range.start,
        Value::NullKeyword(v) => v.range.start,
    }
}

/// What kind of value it is, for messages.
pub(super) fn kind(value: &Value<'_>) -> &'static str {
    match value {
        Value::StringLit(_) => "a string",
        Value::NumberLit(_) => "a number",
        Value::BooleanLit(_) => "a boolean",
        Value::Object(_) => "an object",
        Value::Array(_) => "an array",
        Value::NullKeyword(_) => "null",
    }
}

/// The origin of a byte offset of `text`.
pub(super) fn origin(text: &str, file: &Path, source: super::SettingsSource, offset: usize) -> Origin {
    let (line, column) = line_col(text, offset);
    Origin { source, file: file.to_path_buf(), line, column }
}
