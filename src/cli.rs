//! Command-line flags: the SDK's standard ones plus this function's own.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use crate::runtime::Limits;

/// function-starlark: runs Starlark scripts as a Crossplane composition function.
#[derive(Parser, Debug)]
#[command(version, about)]
pub struct Cli {
    /// Serving, TLS, logging and metrics flags shared by every function.
    #[command(flatten)]
    pub sdk: function_sdk_rust::Args,

    /// Where ConfigMaps holding scripts are mounted (`scriptConfigRef`).
    #[arg(long, env = "STARLARK_SCRIPTS_DIR", default_value = "/scripts")]
    pub scripts_dir: PathBuf,

    /// Wall-clock seconds one script run may take.
    #[arg(long, env = "STARLARK_TIMEOUT_SECONDS", default_value_t = 10)]
    pub timeout_seconds: u64,

    /// Best-effort Starlark heap limit per run, in MiB.
    #[arg(long, env = "STARLARK_MAX_HEAP_MIB", default_value_t = 256)]
    pub max_heap_mib: usize,

    /// Compiled scripts kept in memory.
    #[arg(long, env = "STARLARK_CACHE_SIZE", default_value_t = 256)]
    pub cache_size: usize,
}

impl Cli {
    /// The run limits these flags ask for.
    pub fn limits(&self) -> Limits {
        Limits {
            timeout: Duration::from_secs(self.timeout_seconds.max(1)),
            max_heap_bytes: self.max_heap_mib.saturating_mul(1 << 20),
            ..Limits::default()
        }
    }
}
