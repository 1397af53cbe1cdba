//! `${VAR}` and `${VAR:-default}`, as Claude Code expands `.mcp.json`.

/// `text` with each `${VAR}` replaced by `lookup(VAR)` and each `${VAR:-default}` by that or
/// the default; an unset variable without a default is an error naming it. A `${` with no
/// closing brace is kept as it is.
///
/// # Errors
///
/// The text of the error: the variable, and how it was named.
pub fn expand_with(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &rest[start + 2..start + end];
        let (var, default) = match inner.split_once(":-") {
            Some((v, d)) => (v, Some(d)),
            None => (inner, None),
        };
        match (lookup(var), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(format!("the variable {var} is not set (named as ${{{var}}})")),
        }
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::expand_with;

    #[test]
    fn variables_expand_as_claude_code_expands_them() {
        let env = |var: &str| (var == "SET").then(|| "v".to_string());
        let expand = |text: &str| expand_with(text, &env);
        assert_eq!(expand("a${SET}b").unwrap(), "avb");
        assert_eq!(expand("${UNSET:-d}").unwrap(), "d");
        assert_eq!(expand("${SET:-d}").unwrap(), "v");
        assert!(expand("${UNSET}").unwrap_err().contains("UNSET"));
        assert_eq!(expand("plain ${").unwrap(), "plain ${");
    }
}
