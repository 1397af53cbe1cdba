//! The crate's error type.

/// What can go wrong installing a tool. Every message names the source and, where there is
/// one, the command that fixes it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The registry could not be reached or refused a request.
    #[error("{reference}: {message}")]
    Registry {
        /// The reference being fetched or pushed.
        reference: String,
        /// What went wrong.
        message: String,
        /// The registry's answer, when it gave one.
        #[source]
        source: Option<crate::WireError>,
    },
    /// The artifact is not a Wasm component in the CNCF Wasm OCI layout.
    #[error("{reference}: not a Wasm component artifact: {message}")]
    Layout {
        /// The reference.
        reference: String,
        /// What is wrong with it.
        message: String,
    },
    /// Bytes whose digest is not the one expected: refused before anything is done with them.
    #[error("{what}: digest mismatch: expected {expected}, got {actual}; refusing it")]
    DigestMismatch {
        /// What was checked.
        what: String,
        /// The digest expected.
        expected: String,
        /// The digest of the bytes.
        actual: String,
    },
    /// A signature that does not verify, or that signs other bytes.
    #[error("{0}")]
    BadSignature(String),
    /// A signature is required and there is none, or its signer is not trusted for the source.
    #[error("{0}")]
    Untrusted(String),
    /// A file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// What was being done.
        message: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The store (inside the compile cache directory) cannot be used.
    #[error("component store: {0}")]
    Store(String),
    /// `toolhost.lock` cannot be parsed.
    #[error("{path}: {message}")]
    Lock {
        /// The lock file.
        path: std::path::PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The registry wants credentials it was not given, or refused the ones it was given.
    #[error("{reference}: the registry refused access ({message}); {hint}")]
    Unauthorized {
        /// The reference being fetched or pushed.
        reference: String,
        /// What the registry said.
        message: String,
        /// What to do about it.
        hint: String,
    },
    /// The credentials configured for a registry cannot be used.
    #[error("credentials for {registry} in {path}: {message}")]
    Credentials {
        /// The registry (`host[:port]`).
        registry: String,
        /// The docker config file.
        path: std::path::PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A `[tls] ca_files` entry that is not a usable certificate.
    #[error("TLS roots: {0}")]
    Tls(String),
    /// No tag of the repository is a version the requirement allows.
    #[error(
        "{repository}: no tag is a version matching {requirement} (tags: {}); publish one, or change `version`",
        if tags.is_empty() { "none".to_string() } else { tags.join(", ") }
    )]
    NoMatchingVersion {
        /// `oci://REGISTRY/REPOSITORY`.
        repository: String,
        /// The requirement.
        requirement: String,
        /// Some of the tags there are.
        tags: Vec<String>,
    },
    /// A source this version cannot fetch.
    #[error("{0}")]
    Unsupported(String),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(path: &std::path::Path, message: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io { path: path.to_path_buf(), message: message.into(), source }
    }
}
