//! The exports of the kinds of component that do not implement toolhost's world: one
//! function of a function component, and a command program's `run`. Both answer like
//! toolhost's `call` ([`CallReturn`]), so the pipeline treats every kind alike after them.

use super::{CallReturn, Export, Instantiated, with_sandbox_notes};
use crate::invoke::bindings::{ToolOutput, WitContentBlock, WitToolError};
use crate::kinds::FunctionExport;
use crate::kinds::command::{self, Captured, CommandInput};
use crate::kinds::wit_value;
use crate::sandbox::state::HostState;
use wasmtime::Store;
use wasmtime::component::Val;

/// One function of a function component, called with the tool's (checked) JSON input.
pub(crate) struct CallFunction<'a> {
    pub export: &'a FunctionExport,
    pub input: &'a str,
}

impl Export for CallFunction<'_> {
    type Output = CallReturn;
    const POOLED: bool = false;
    const NAME: &'static str = "function";

    async fn call(&self, tool: &Instantiated, store: &mut Store<HostState>) -> wasmtime::Result<CallReturn> {
        let Instantiated::Functions(instance) = tool else {
            return Err(wasmtime::format_err!("not a function component"));
        };
        let func = self
            .export
            .func(instance, &mut *store)
            .ok_or_else(|| wasmtime::format_err!("the component exports no function `{}`", self.export))?;
        let ty = func.ty(&*store);
        let params: Vec<_> = ty.params().map(|(name, ty)| (name.to_string(), ty)).collect();
        let input: serde_json::Value = serde_json::from_str(self.input)?;
        let args = match wit_value::params_from_json(&params, &input) {
            Ok(args) => args,
            Err(e) => return Ok(CallReturn::Failed(WitToolError::InvalidInput(e.to_string()))),
        };
        let mut results = vec![Val::Bool(false); ty.results().len()];
        func.call_async(&mut *store, &args, &mut results).await?;
        Ok(answer(results.first()))
    }

    fn finish(output: CallReturn, state: &HostState, tool: &str) -> CallReturn {
        with_sandbox_notes(output, state, tool)
    }
}

/// What a function's result tells the model: a `result`'s error case is an error; a string
/// is itself; anything else its JSON form; no result, that the function returned.
fn answer(result: Option<&Val>) -> CallReturn {
    let text = |v: &Val| match v {
        Val::String(s) => s.clone(),
        other => wit_value::to_json(other).to_string(),
    };
    match result {
        None => output(String::new()),
        Some(Val::Result(Err(e))) => CallReturn::Failed(WitToolError::Failed(
            e.as_deref().map_or_else(|| "the function returned an error".to_string(), text),
        )),
        Some(Val::Result(Ok(v))) => output(v.as_deref().map(text).unwrap_or_default()),
        Some(v) => output(text(v)),
    }
}

fn output(text: String) -> CallReturn {
    let content = if text.is_empty() { Vec::new() } else { vec![WitContentBlock::Text(text)] };
    CallReturn::Output(ToolOutput { content, context_updates: Vec::new() })
}

/// A command program's `run`, with its arguments and standard input in the store.
pub(crate) struct RunCommand(pub CommandInput);

impl Export for RunCommand {
    type Output = CallReturn;
    const POOLED: bool = false;
    const NAME: &'static str = "run";

    async fn call(&self, tool: &Instantiated, store: &mut Store<HostState>) -> wasmtime::Result<CallReturn> {
        let Instantiated::Command(command) = tool else {
            return Err(wasmtime::format_err!("not a command program"));
        };
        // `exit(n)` ends the program with a trap carrying its code; `run` returning `Err`
        // is exit code 1.
        let code = match command.wasi_cli_run().call_run(&mut *store).await {
            Ok(Ok(())) => 0,
            Ok(Err(())) => 1,
            Err(e) => match e.downcast_ref::<wasmtime_wasi::I32Exit>() {
                Some(exit) => exit.0,
                None => return Err(e),
            },
        };
        let state = store.data();
        let (stdout, stderr) = (state.stdout.contents(), state.stderr.contents());
        let text = command::answer(
            code,
            &Captured { text: stdout.0, dropped: stdout.1 },
            &Captured { text: stderr.0, dropped: stderr.1 },
        );
        Ok(if code == 0 { output(text) } else { CallReturn::Failed(WitToolError::Failed(text)) })
    }

    fn command(&self) -> Option<&CommandInput> {
        Some(&self.0)
    }

    fn finish(output: CallReturn, state: &HostState, tool: &str) -> CallReturn {
        with_sandbox_notes(output, state, tool)
    }
}
