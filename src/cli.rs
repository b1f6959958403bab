//! Command-line flags: the SDK's standard ones plus this function's own.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use crate::loader::oci::{OciConfig, PullPolicy, credentials};
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

    /// When cached OCI module artifacts are checked again: IfNotPresent
    /// (never) or Always (once the cache entry is older than --oci-cache-ttl).
    #[arg(long, env = "STARLARK_OCI_PULL_POLICY", default_value = "IfNotPresent")]
    pub oci_pull_policy: PullPolicy,

    /// How long a cached OCI tag is trusted under Always (Go duration);
    /// 0 revalidates on every request.
    #[arg(long, env = "STARLARK_OCI_CACHE_TTL", default_value = "0", value_parser = parse_ttl)]
    pub oci_cache_ttl: Duration,

    /// Where registry-credential secrets (dockerConfigSecret) are mounted.
    #[arg(
        long,
        env = "STARLARK_DOCKER_SECRETS_DIR",
        default_value = crate::loader::oci::DEFAULT_SECRETS_DIR
    )]
    pub docker_secrets_dir: PathBuf,
}

/// A non-negative Go duration.
fn parse_ttl(s: &str) -> Result<Duration, String> {
    let nanos = crate::duration::parse_go_duration(s).map_err(|e| e.to_string())?;
    u64::try_from(nanos)
        .map(Duration::from_nanos)
        .map_err(|_| format!("the OCI cache TTL must not be negative, got {s:?}"))
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

    /// The OCI resolver settings these flags ask for; the host's Docker
    /// config is found from the process environment.
    pub fn oci(&self) -> OciConfig {
        OciConfig {
            pull_policy: self.oci_pull_policy,
            cache_ttl: self.oci_cache_ttl,
            secrets_dir: self.docker_secrets_dir.clone(),
            host_docker_config: credentials::host_config_path(|k| std::env::var(k).ok()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oci_flags_are_validated() {
        let cli = Cli::try_parse_from([
            "f",
            "--oci-pull-policy",
            "Always",
            "--oci-cache-ttl",
            "1h30m",
        ])
        .unwrap();
        assert_eq!(cli.oci_pull_policy, PullPolicy::Always);
        assert_eq!(cli.oci_cache_ttl, Duration::from_mins(90));
        let cli = Cli::try_parse_from(["f"]).unwrap();
        assert_eq!(cli.oci_pull_policy, PullPolicy::IfNotPresent);
        assert_eq!(cli.oci_cache_ttl, Duration::ZERO);
        assert!(Cli::try_parse_from(["f", "--oci-pull-policy", "Never"]).is_err());
        assert!(Cli::try_parse_from(["f", "--oci-cache-ttl", "10"]).is_err());
        assert!(Cli::try_parse_from(["f", "--oci-cache-ttl", "-1s"]).is_err());
    }
}
