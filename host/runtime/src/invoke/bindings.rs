//! Host bindings for the `toolhost:tool@0.1.0` world. Generated code stays private; the rest
//! of the crate uses the names re-exported here.

mod gen_ {
    wasmtime::component::bindgen!({
        path: "../../wit/tool@0.1.0",
        world: "plugin",
        // Exports run as futures on tokio so that many calls share few threads and a spinning
        // guest yields at every epoch tick instead of holding a worker.
        exports: { default: async },
        // `host.progress` and `host.context-get` are quick, cannot fail and never block, so
        // they stay plain synchronous functions.
    });
}

/// The optional `toolhost:session@0.1.0` interface: log messages and questions for the people
/// watching. `elicit` waits for a person, so it is async (the call's timer still runs).
mod session_gen {
    wasmtime::component::bindgen!({
        path: "../../wit/session@0.1.0",
        world: "imports",
        imports: { "toolhost:session/session.elicit": async },
    });
}

pub(crate) use gen_::exports::toolhost::tool::tool::Guest as ToolExports;
pub(crate) use gen_::toolhost::tool::host::Host as HostImports;
pub(crate) use gen_::toolhost::tool::types::{
    Capability as WitCapability, ContentBlock as WitContentBlock, Host as TypesHost, Image as WitImage,
    ToolError as WitToolError, ToolOutput, ToolSchema,
};
pub(crate) use gen_::{Plugin, PluginPre};
pub(crate) use session_gen::Imports as SessionWorld;
pub(crate) use session_gen::toolhost::session::session::{
    ElicitAction as WitElicitAction, ElicitAnswer as WitElicitAnswer, Host as SessionImports, LogLevel as WitLogLevel,
};

/// The export names a component must have to be a tool of this world.
pub(crate) const TOOL_INTERFACE: &str = "toolhost:tool/tool@0.1.0";
