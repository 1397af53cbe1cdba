//! `toolhost keygen FILE`: a new ed25519 key pair for `toolhost publish --sign FILE`. The
//! secret key goes to FILE (mode 0600, never over an existing file); the public key is printed,
//! in the form `[signatures.signers.NAME] key` takes.

use anyhow::{Context, Result};
use clap::Args;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::PathBuf;
use toolhost_registry::sign::SecretKey;

#[derive(Args, Debug)]
pub struct KeygenCommand {
    /// Where to write the secret key.
    file: PathBuf,
}

impl KeygenCommand {
    pub async fn execute(self, _global: &crate::setup::GlobalArgs) -> Result<u8> {
        let key = SecretKey::generate()?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&self.file)
            .with_context(|| format!("creating {} (an existing file is never replaced)", self.file.display()))?;
        file.write_all(key.to_text().as_bytes()).with_context(|| format!("writing {}", self.file.display()))?;
        crate::output::outln!("{}", key.public());
        eprintln!(
            "secret key in {}; give the line above to those who install your tools ([signatures.signers.NAME] key)",
            self.file.display()
        );
        Ok(0)
    }
}
