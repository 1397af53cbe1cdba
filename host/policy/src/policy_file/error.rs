//! Why a policy file was refused, and where: typed, so a caller can tell an unknown key from
//! an unreadable file without reading text.

use super::{MAX_POLICY_FILE_BYTES, one_of, position, prefix};
use std::path::PathBuf;

/// Why a policy file was refused, and where.
#[derive(Debug, thiserror::Error)]
#[error("{}{}: {what}", path.display(), position(*line, *column))]
#[non_exhaustive]
pub struct PolicyFileError {
    /// The policy file (the `origin` given to [`crate::parse_policy_file`]).
    pub path: PathBuf,
    /// 1-based line, 0 when the problem is the whole file (unreadable, too large).
    pub line: usize,
    /// 1-based column (in characters), 0 when there is no line.
    pub column: usize,
    /// What is wrong.
    pub what: PolicyFileProblem,
    /// The I/O error behind [`PolicyFileProblem::Unreadable`].
    pub source: Option<std::io::Error>,
}

/// What is wrong with a policy file. Each variant that concerns one value names its key path
/// (`field`, such as `permissions.storage.allow[0].uri`; empty for the document itself).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyFileProblem {
    /// The file could not be read (the cause is [`PolicyFileError::source`]).
    #[error("cannot read the policy file")]
    Unreadable,
    /// The path names a directory, a FIFO, a socket or a device.
    #[error("not a regular file but {kind}")]
    NotRegularFile {
        /// What it is instead (`a directory`, `a FIFO`, …).
        kind: &'static str,
    },
    /// More than [`MAX_POLICY_FILE_BYTES`].
    #[error("{size} bytes: a policy file may have at most {MAX_POLICY_FILE_BYTES}")]
    TooLarge {
        /// The size found (at least; reading stops past the limit).
        size: u64,
    },
    /// The text is not UTF-8 (the position is that of the first bad byte).
    #[error("not UTF-8: byte 0x{byte:02x}")]
    NotUtf8 {
        /// The first byte that is not part of a UTF-8 character.
        byte: u8,
    },
    /// Not a YAML document this reader accepts: a syntax error, a duplicate key, an anchor or
    /// alias, a custom tag, more than one document, too deep.
    #[error("{message}")]
    Syntax {
        /// The YAML parser's message (one line, control characters escaped).
        message: String,
    },
    /// A key the format does not have here.
    #[error("{}unknown key {key:?} (expected {})", prefix(field), one_of(expected))]
    UnknownKey {
        /// The mapping it is in (empty for the document).
        field: String,
        /// The key as written.
        key: String,
        /// The keys the mapping may have.
        expected: &'static [&'static str],
    },
    /// A required key is absent.
    #[error("{}missing key `{key}`", prefix(field))]
    MissingKey {
        /// The mapping it is missing from (empty for the document).
        field: String,
        /// The key.
        key: &'static str,
    },
    /// A value of the wrong type (a string where a list belongs, a number where a string does).
    #[error("{}expected {expected}, got {got}", prefix(field))]
    WrongType {
        /// The value's key path.
        field: String,
        /// What belongs there.
        expected: &'static str,
        /// What is there (`the integer 3`, `a mapping`).
        got: String,
    },
    /// A `version` other than 1.x.
    #[error("version: {given:?} is not a version of the format toolhost reads (1.x, such as \"1.0\")")]
    Version {
        /// The version as written.
        given: String,
    },
    /// An `access` word other than `read` or `write`.
    #[error("{field}: {given:?} is not an access: only `read` and `write` are")]
    Access {
        /// The word's key path (`permissions.storage.allow[0].access[1]`).
        field: String,
        /// The word as written.
        given: String,
    },
    /// A storage `uri` that is not `fs://…`.
    #[error(
        "{field}: {given:?} is not an fs:// URI: storage is a directory, fs://PATH (relative to the workspace) or \
         fs:///PATH (absolute)"
    )]
    NotFsUri {
        /// The URI's key path.
        field: String,
        /// The URI as written.
        given: String,
    },
    /// A value of the right type that names nothing a grant can hold: a wildcard in a path, an
    /// invalid network pattern, an empty variable name, a repeated access word.
    #[error("{field}: {why}")]
    Invalid {
        /// The value's key path.
        field: String,
        /// What is wrong with it.
        why: String,
    },
    /// Part of Wassette's format that toolhost does not enforce, refused rather than ignored
    /// (ignoring it would grant something other than what the author meant).
    #[error("{field}: not supported: {why}")]
    Unsupported {
        /// The key path of the part.
        field: String,
        /// Why, and what to write instead.
        why: &'static str,
    },
}
