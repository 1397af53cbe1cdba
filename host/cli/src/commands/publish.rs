//! `toolhost publish FILE oci://REGISTRY/REPOSITORY:TAG [--sign KEY]`: push a tool component
//! in the CNCF Wasm OCI artifact layout (with the policy file beside it, if any, as a layer of
//! its own), with an ed25519 signature beside it that covers both. Without a destination,
//! `--sign` writes `FILE.sig` beside the file instead (covering its policy file too).

use crate::install;
use anyhow::{Context, Result, bail};
use clap::Args;
use std::path::PathBuf;
use toolhost_policy::ToolRef;
use toolhost_registry::oci::{self, ComponentMeta};
use toolhost_registry::sign::SecretKey;

#[derive(Args, Debug)]
pub struct PublishCommand {
    /// The component.
    file: PathBuf,
    /// `oci://REGISTRY/REPOSITORY:TAG` (omit to only sign the file).
    destination: Option<String>,
    /// Sign with this secret key (from `toolhost keygen`).
    #[arg(long, value_name = "KEY")]
    sign: Option<PathBuf>,
}

impl PublishCommand {
    pub async fn execute(self, global: &crate::setup::GlobalArgs) -> Result<u8> {
        let bytes = std::fs::read(&self.file).with_context(|| format!("reading {}", self.file.display()))?;
        // Only a tool that loads is published: a broken one fails here, not at its users'.
        let i = install::describe(&self.file.display().to_string(), &bytes).await?;
        let digest = toolhost_registry::digest_of(&bytes);
        // Its policy file (`NAME.policy.yaml` beside it) travels with it, as Wassette publishes
        // one: checked first, so that no one installs a policy that does not parse, and signed
        // with the component, so that no one else's policy file passes for the signer's.
        let policy_file = toolhost_policy::policy_file_path(&self.file).filter(|p| p.exists());
        let policy = match &policy_file {
            Some(path) => {
                toolhost_policy::read_policy_file(path)?;
                Some(std::fs::read(path).with_context(|| format!("reading {}", path.display()))?)
            }
            None => None,
        };
        let policy_digest = policy.as_deref().map(toolhost_registry::digest_of);
        let key = self.sign.as_deref().map(SecretKey::read).transpose()?;
        let signature = key.as_ref().map(|k| k.sign(&digest, policy_digest.as_deref()));
        let with = policy_file.map(|p| format!(" with its policy file {}", p.display())).unwrap_or_default();
        let Some(destination) = &self.destination else {
            let Some(signature) = signature else {
                bail!("nothing to do: give a destination (oci://…) or --sign KEY")
            };
            let sig_file = PathBuf::from(format!("{}.sig", self.file.display()));
            crate::setup::replace_file(&sig_file, &signature.to_json())?;
            let name = &i.info.name;
            crate::output::outln!("Signed {name} ({digest}){with} by {}: {}", signature.key, sig_file.display());
            return Ok(0);
        };
        let ToolRef::Oci(r) = destination.parse::<ToolRef>()? else {
            bail!("publish pushes to an OCI registry: the destination must be oci://REGISTRY/REPOSITORY:TAG");
        };
        if r.digest.is_some() {
            bail!("publish to a tag, not a digest: {r}");
        }
        let mut meta =
            ComponentMeta { exports: i.exports.clone(), imports: i.imports.clone(), ..ComponentMeta::default() };
        meta.annotations.insert("org.opencontainers.image.title".into(), i.info.name.clone());
        meta.annotations.insert("org.opencontainers.image.description".into(), i.info.description.clone());
        if let Some(tag) = &r.tag {
            meta.annotations.insert("org.opencontainers.image.version".into(), tag.clone());
        }
        meta.policy = policy;
        let access = install::access(&crate::setup::load_config(global)?)?;
        let manifest = oci::push(&r, &access, &bytes, &meta, signature.as_ref()).await?;
        let signed = signature.map(|s| format!(", signed by {}", s.key)).unwrap_or_default();
        crate::output::outln!("Published {}{with} to {}{signed}", i.info.name, r.with_digest(&manifest));
        Ok(0)
    }
}
