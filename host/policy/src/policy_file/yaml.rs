//! A policy file's YAML as a small tree that keeps the line and column of every node.
//!
//! The YAML crate is serde-saphyr: `serde_yaml` is archived, `serde_yml` deprecated after an
//! unsoundness advisory, and `serde_norway` (a `serde_yaml` fork) still parses with libyaml
//! translated to unsafe Rust. serde-saphyr and its parser (granit-parser) are safe Rust
//! (`#![forbid(unsafe_code)]`), fuzzed and built not to panic on malformed input; every error
//! has a line and column, [`Spanned`] keeps the position of each value, and its budget bounds
//! nesting, anchors, aliases and documents, which a file from a stranger needs.
//!
//! The document is first read into this tree, not straight into typed structs, so that the
//! reader in the parent module decides every error itself: an unknown key, a value of the wrong
//! type and a missing key each name their key path and position, which serde's derived
//! errors do not (they name the type, not the field). The tree is cheap: the input is at most
//! [`super::MAX_POLICY_FILE_BYTES`].

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::{MessageFormatter, Spanned, UserMessageFormatter};
use std::fmt;

/// How deep a policy file may nest. The deepest valid path is
/// `permissions.storage.allow[i].access[j]`: six levels under the document. The bound also bounds
/// the recursion of [`Node`]'s visitor, which an input of 64 KiB of `[` would otherwise drive
/// 65 536 frames deep.
const MAX_DEPTH: usize = 16;

/// One YAML node.
#[derive(Debug)]
pub(super) enum Node {
    /// A mapping, its entries in document order (duplicate keys are a parse error).
    Map(Vec<(Spanned<Node>, Spanned<Node>)>),
    /// A sequence.
    Seq(Vec<Spanned<Node>>),
    /// A string scalar (quoted, or plain and not a number, boolean or null).
    Str(String),
    /// `null`, `~` or nothing.
    Null,
    /// Any other scalar: its kind (`integer`, `float`, `boolean`) and how it reads.
    Other(&'static str, String),
}

impl Node {
    /// What the node is, for "expected X, got Y" messages.
    pub(super) fn describe(&self) -> String {
        match self {
            Node::Map(_) => "a mapping".to_string(),
            Node::Seq(_) => "a list".to_string(),
            Node::Str(s) => format!("the string {s:?}"),
            Node::Null => "nothing (null)".to_string(),
            Node::Other(kind, text) => format!("the {kind} {text}"),
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML node")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Str(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Node, E> {
        Ok(Node::Str(v))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Other("boolean", v.to_string()))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Other("integer", v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Other("integer", v.to_string()))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Node, E> {
        Ok(Node::Other("integer", v.to_string()))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Node, E> {
        Ok(Node::Other("integer", v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        // `{:?}` keeps the point: `1.0`, not `1`.
        Ok(Node::Other("number", format!("{v:?}")))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Node, E> {
        Ok(Node::Other("binary value", format!("of {} bytes", v.len())))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node, D::Error> {
        Node::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key()? {
            entries.push((key, map.next_value()?));
        }
        Ok(Node::Map(entries))
    }
}

/// Why the text is not a YAML document this reader accepts, and where (1-based; 0 when the
/// parser gave no position).
pub(super) struct YamlError {
    pub(super) line: usize,
    pub(super) column: usize,
    pub(super) message: String,
}

/// Read `text` as one YAML document. `None` for a document with no content at all (an empty
/// file, only comments, a lone `---`, or `null`).
///
/// The reader is set for text from strangers:
/// - at most one document, nested at most [`MAX_DEPTH`] deep;
/// - no anchors, aliases or merge keys (`&a`, `*a`, `<<`): a permission file is read by people
///   before they trust it, and an alias shows a value somewhere other than where it is written
///   (and is the lever of "billion laughs" inputs);
/// - no tags but YAML's own (`!!str`), so `!custom` cannot smuggle meaning past the reader;
/// - duplicate keys are errors (an `allow` written twice would otherwise lose one of them);
/// - only `true`/`false` are booleans (`yes`, `on` stay strings), as in YAML 1.2.
pub(super) fn parse(text: &str) -> Result<Option<Spanned<Node>>, YamlError> {
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_depth: MAX_DEPTH,
            max_documents: 1,
            max_anchors: 0,
            max_aliases: 0,
            max_merge_keys: 0,
        },
        strict_booleans: true,
        reject_unsupported_tags: true,
        with_snippet: false,
    };
    let document: Option<Spanned<Node>> =
        serde_saphyr::from_str_with_options(text, options).map_err(|e| yaml_error(&e))?;
    Ok(document.filter(|d| !matches!(d.value, Node::Null)))
}

fn yaml_error(e: &serde_saphyr::Error) -> YamlError {
    let (line, column) = e.location().map_or((0, 0), |l| (to_usize(l.line()), to_usize(l.column())));
    let message = match e.without_snippet() {
        serde_saphyr::Error::Budget { breach, .. } => match breach {
            BudgetBreach::Anchors { .. } | BudgetBreach::Aliases { .. } => {
                "anchors and aliases (`&name`, `*name`) are not allowed in a policy file: write each value where \
                 it applies"
                    .to_string()
            }
            BudgetBreach::MergeKeys { .. } => "merge keys (`<<`) are not allowed in a policy file".to_string(),
            BudgetBreach::Depth { .. } => format!("nested more than {MAX_DEPTH} levels deep"),
            BudgetBreach::Documents { .. } => "more than one YAML document (`---`) in a policy file".to_string(),
            other => format!("too large or too complex: {other:?}"),
        },
        other => UserMessageFormatter.format_message(other).into_owned(),
    };
    YamlError { line, column, message: one_line(&message) }
}

/// A message from the parser on one line, with control characters shown escaped, so that a
/// hostile file cannot draw on the terminal that shows its error.
fn one_line(message: &str) -> String {
    let words: Vec<&str> = message.split_whitespace().collect();
    words
        .join(" ")
        .chars()
        .map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() })
        .collect()
}

pub(super) fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}
