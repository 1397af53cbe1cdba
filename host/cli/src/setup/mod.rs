//! Global options and turning them into a loaded runtime: workspace, config, compile cache,
//! embedded default tools, `--tools` directories and tools named in the config. One module per
//! concern; every command reaches them as `setup::…`.

mod args;
mod background;
mod config;
mod display;
mod files;
mod load;
mod logging;
mod signals;

pub use crate::pins::OnWidening;
pub use args::*;
pub use background::*;
pub use config::*;
pub(crate) use display::*;
pub use files::*;
pub use load::*;
pub use logging::*;
pub use signals::*;
