//! From one step of a call to one guest export: what the store gets. The call's access
//! (nothing, the grant, or the grant read-only) becomes the preopens, the file rules, the
//! network patterns and the per-call environment that [`crate::invoke`] runs the export with.

use crate::call::ctx::{Access, CallCtx};
use crate::call::outcome::{Failure, OutcomeKind};
use crate::invoke::{Export, FsCall, InvokeCtx, invoke};
use crate::registry::Runtime;
use crate::sandbox::fsguard::FsRules;
use crate::sandbox::state::{Asker, CallEnv};
use std::path::PathBuf;

impl Runtime {
    /// Run `export` of the call's tool with what `access` allows (the grant, read-only, or
    /// nothing); `approved`: paths a person allowed this call to write although other programs
    /// run them.
    pub(crate) async fn invoke<E: Export>(
        &self,
        cx: &CallCtx<'_>,
        access: Access,
        export: E,
        approved: Vec<PathBuf>,
    ) -> Result<E::Output, Failure> {
        let tool = cx.tool;
        let compiled = tool.code.get(&self.engine).await.map_err(|m| {
            Failure::new(
                OutcomeKind::HostError,
                format!("the code of tool {} cannot be made ready: {m}", tool.info.name),
            )
        })?;
        *cx.tier.lock().unwrap_or_else(|e| e.into_inner()) = Some(compiled.tier);
        let fs = match access {
            Access::Nothing => FsCall::default(),
            Access::Granted | Access::ReadOnly => {
                let mut policies = vec![self.fs_policy.clone()];
                policies.extend(tool.own_policy.clone());
                FsCall {
                    preopens: tool.preopens.clone(),
                    read_only: access == Access::ReadOnly || tool.info.read_only,
                    rules: FsRules { policies, check_reads: tool.check_reads },
                    approved,
                }
            }
        };
        let call_env = CallEnv {
            context: cx.view.context.clone(),
            namespace: tool.context_namespace.clone(),
            workspace_json: self.workspace_json.clone(),
            progress: self.progress_to(cx),
            hosts: match access {
                Access::Nothing => None,
                Access::Granted | Access::ReadOnly => Some(cx.hosts.clone()),
            },
            // Questions only from `call` (`validate` and `is-concurrency-safe` run with nothing).
            asker: match access {
                Access::Nothing => None,
                Access::Granted | Access::ReadOnly => Some(Asker {
                    decider: self.asker_of(cx),
                    id: cx.tool_use.id.as_str().into(),
                    tool: tool.info.name.as_str().into(),
                }),
            },
        };
        let store = InvokeCtx {
            engine: &self.engine,
            pre: &compiled.pre,
            tool: &tool.info.name,
            limits: &tool.limits,
            workspace: &self.workspace,
            env_vars: &self.env,
            call_env,
            grant: match access {
                Access::Nothing => None,
                Access::Granted => Some(&tool.effective),
                Access::ReadOnly => Some(&tool.effective_read_only),
            },
            net: &tool.net_patterns,
            pool: Some(&tool.pure_pool),
            cancel: cx.cancel(),
            tls: &self.tls,
            fs,
            trace: Some(&cx.trace),
        };
        invoke(store, export).await
    }
}
