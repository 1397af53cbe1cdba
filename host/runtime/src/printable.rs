//! Text from tools and other programs, made safe to show on a terminal.

/// What a tool said, made safe for a terminal: control characters (escape sequences could
/// move the cursor, rewrite earlier lines or fake a prompt) and bidirectional overrides are
/// shown as `\u{…}` escapes; tabs stay.
pub fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if (c.is_control() && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}
