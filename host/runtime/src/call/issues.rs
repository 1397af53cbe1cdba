//! A schema error as the model reads it. `anyOf` and `oneOf` errors say only that no
//! alternative matched, which tells a model nothing about what to change (a nullable record
//! missing a field is such an error); these add why the closest alternative failed.

use jsonschema::ValidationError;
use jsonschema::error::ValidationErrorKind;

/// One line of a schema refusal: where, what, and for a failed choice of alternatives, why
/// the closest one did not match.
pub(crate) fn issue_line(e: &ValidationError<'_>) -> String {
    format!("- {}", describe(e, 0))
}

/// How deep the explanations of nested alternatives go.
const MAX_DEPTH: usize = 4;

fn describe(e: &ValidationError<'_>, depth: usize) -> String {
    let mut text = format!("{}: {e}", at(e));
    if depth < MAX_DEPTH
        && let Some(branch) = closest(e)
    {
        let reasons: Vec<String> = branch.iter().map(|inner| describe(inner, depth + 1)).collect();
        text.push_str(&format!(" (the closest alternative fails: {})", reasons.join("; ")));
    }
    text
}

fn at(e: &ValidationError<'_>) -> String {
    let path = e.instance_path().to_string();
    if path.is_empty() { "(root)".to_string() } else { format!("`{path}`") }
}

/// The alternative whose errors go deepest into the value (it matched the most before
/// failing); among equals, the one with the fewest errors.
fn closest<'e>(e: &'e ValidationError<'_>) -> Option<&'e [ValidationError<'static>]> {
    let (ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context }) = e.kind() else {
        return None;
    };
    let depth = |err: &ValidationError<'_>| err.instance_path().to_string().matches('/').count();
    let base = depth(e);
    context
        .iter()
        .filter(|branch| !branch.is_empty())
        .max_by_key(|branch| {
            let deepest = branch.iter().map(depth).max().unwrap_or(0);
            // A branch refused only for the value's type, at the value itself, is the least
            // informative (`null` when an object was given).
            let only_type =
                branch.iter().all(|b| depth(b) == base && matches!(b.kind(), ValidationErrorKind::Type { .. }));
            (deepest, !only_type, std::cmp::Reverse(branch.len()))
        })
        .map(Vec::as_slice)
}
