//! Command-line flags: the SDK's standard ones plus this function's own.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use crate::limits::Limits;
use crate::loader::oci::{OciConfig, PullPolicy, credentials};

/// function-starlark: runs Starlark scripts as a Crossplane composition function.
#[derive(Parser, Debug)]
#[command(version = crate::VERSION, about)]
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

    /// Let Starlark functions call themselves, directly or through others,
    /// up to the call-depth limit (1,000 calls deep). The Go implementation
    /// rejects recursion (`function f called recursively`), which is also
    /// the default here.
    #[arg(long, env = "STARLARK_ALLOW_RECURSION")]
    pub allow_recursion: bool,

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

    /// Where scripts run: `processes` (worker processes of this binary; a
    /// script can only ever end its own worker) or `threads` (threads of
    /// the server process: a little faster, but a script that defeats
    /// every check can take the server down with it).
    #[arg(long, env = "STARLARK_ISOLATION", default_value = "processes")]
    pub isolation: Isolation,

    /// Seconds a worker process may stay idle before it exits (0: never);
    /// the next request starts one again.
    #[arg(long, env = "STARLARK_WORKER_IDLE_SECONDS", default_value_t = 60)]
    pub worker_idle_seconds: u64,

    /// Microseconds a wait on a worker process polls before sleeping: the
    /// server for the answer of the only run in flight, a worker for its
    /// next job, once no two runs have been in flight for 20 ms (under
    /// load, polling holds a core the server needs) and only for a run
    /// that came within this budget of the last answer (a caller calling
    /// now and then, as Crossplane does, would have every wait poll out
    /// its budget). Waking a sleeping
    /// thread costs tens of microseconds on small VMs; polling trades at
    /// most this much CPU per wait for it (0: never poll). Ignored with
    /// `--isolation threads`.
    #[arg(long, env = "STARLARK_WORKER_POLL_MICROS", default_value_t = 500)]
    pub worker_poll_micros: u64,

    /// Threads serving gRPC: reading requests, handing them to the
    /// scripts' workers, writing answers. Scripts never run on them. 1 (the
    /// default) serves on a single thread, which leaves the cores to the
    /// workers and spends a fifth less CPU per call on a 2-core VM
    /// (docs/architecture.md); 0 starts one per core.
    #[arg(long, env = "STARLARK_SERVER_THREADS", default_value_t = 1)]
    pub server_threads: usize,

    /// Seconds calls in flight get to finish after SIGTERM (keep it below
    /// the pod's terminationGracePeriodSeconds, 30 by default).
    #[arg(long, env = "STARLARK_SHUTDOWN_GRACE_SECONDS", default_value_t = 25)]
    pub shutdown_grace_seconds: u64,

    /// How long connecting to an OCI registry may take (Go duration).
    #[arg(long, env = "STARLARK_OCI_CONNECT_TIMEOUT", default_value = "5s", value_parser = parse_timeout)]
    pub oci_connect_timeout: Duration,

    /// How long one read from an OCI registry may wait for data (Go duration).
    #[arg(long, env = "STARLARK_OCI_READ_TIMEOUT", default_value = "10s", value_parser = parse_timeout)]
    pub oci_read_timeout: Duration,

    /// How long fetching one OCI module artifact (manifest and layers) may
    /// take in all (Go duration).
    #[arg(long, env = "STARLARK_OCI_FETCH_TIMEOUT", default_value = "20s", value_parser = parse_timeout)]
    pub oci_fetch_timeout: Duration,

    /// Where registry-credential secrets (dockerConfigSecret) are mounted.
    #[arg(
        long,
        env = "STARLARK_DOCKER_SECRETS_DIR",
        default_value = crate::loader::oci::DEFAULT_SECRETS_DIR
    )]
    pub docker_secrets_dir: PathBuf,

    /// A command to run instead of serving RunFunction.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// What the binary does besides serving.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Print what `crossplane render` prints for a Composition whose
    /// pipeline steps are function-starlark, running them in-process (no
    /// Docker, no running function). The server's flags (limits, OCI)
    /// apply; give them before `render`.
    Render(crate::render::RenderArgs),
    /// Run the `*_test.star` (Starlark unit tests with `assert`) and
    /// `*_test.yaml` (Composition tests) files under the paths, in-process.
    Test(crate::test_runner::TestArgs),
    /// Find mistakes in scripts, modules and Compositions before deploying
    /// them: syntax, undefined names, builtin calls against their
    /// signatures, loads, Resource names and depends_on cycles.
    Check(crate::check::CheckArgs),
    /// Write typed `schema()` modules for the kinds of CRDs (`crd`), the
    /// XRs of XRDs (`xrd`) or Kubernetes' own kinds from its OpenAPI
    /// documents (`openapi`), one per API group and version, to `load()`
    /// from scripts.
    Gen(crate::generate::GenArgs),
    /// Publish a directory of modules (`gen`'s output, a library) as an OCI
    /// module package that `load("oci://...")` pulls.
    Push(crate::push::PushArgs),
    /// Serve editors over stdin and stdout (the Language Server Protocol):
    /// completion, hover, signature help, go-to-definition, `check`'s
    /// findings as diagnostics, and quick fixes.
    Lsp(crate::lsp::LspArgs),
    /// Format `.star` files and the Starlark inside Compositions the way
    /// buildifier formats `.bzl` files (`--check` reports, changing
    /// nothing).
    Fmt(crate::format::FmtArgs),
    /// Debug a render (the Debug Adapter Protocol, on stdin and stdout):
    /// breakpoints in `.star` files, inline modules and a Composition's
    /// inline source, stepping, the call stack and variables. The server's
    /// flags (OCI, memory) apply; give them before `dap`.
    Dap,
}

/// A positive Go duration.
fn parse_timeout(s: &str) -> Result<Duration, String> {
    match parse_ttl(s)? {
        d if d.is_zero() => Err(format!("a timeout must be more than zero, got {s:?}")),
        d => Ok(d),
    }
}

/// Where scripts run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Isolation {
    /// Worker processes.
    Processes,
    /// Threads of the server process.
    Threads,
}

/// A non-negative Go duration.
fn parse_ttl(s: &str) -> Result<Duration, String> {
    let nanos = crate::go::duration::parse_go_duration(s).map_err(|e| e.to_string())?;
    u64::try_from(nanos)
        .map(Duration::from_nanos)
        .map_err(|_| format!("the OCI cache TTL must not be negative, got {s:?}"))
}

/// The reference's environment variables for flags the SDK declares
/// without one: `(variable, flag, takes a value)`.
const FLAG_ENV: [(&str, &str, bool); 3] = [
    ("FUNCTION_ADDRESS", "--address", true),
    ("FUNCTION_INSECURE", "--insecure", false),
    ("MAX_RECV_MESSAGE_SIZE", "--max-recv-message-size", true),
];

impl Cli {
    /// Parses the process arguments. A flag given on the command line
    /// beats its environment variable, which beats the default.
    pub fn from_process() -> Cli {
        Cli::parse_from(with_env_flags(std::env::args().collect(), |name| {
            std::env::var(name).ok()
        }))
    }

    /// How many threads serve gRPC: `--server-threads`, or one per core
    /// for 0.
    pub fn server_threads(&self) -> usize {
        match self.server_threads {
            0 => std::thread::available_parallelism().map_or(1, usize::from),
            n => n,
        }
    }

    /// The run limits these flags ask for.
    pub fn limits(&self) -> Limits {
        Limits {
            timeout: Duration::from_secs(self.timeout_seconds.max(1)),
            max_heap_bytes: self.max_heap_mib.saturating_mul(1 << 20),
            allow_recursion: self.allow_recursion,
            ..Limits::default()
        }
    }

    /// The settings a render runs scripts with.
    pub fn render_options(&self) -> crate::render::Options {
        crate::render::Options {
            limits: self.limits(),
            cache_size: self.cache_size,
            scripts_dir: self.scripts_dir.clone(),
            oci: self.oci(),
            debugger: None,
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
            connect_timeout: self.oci_connect_timeout,
            read_timeout: self.oci_read_timeout,
            fetch_timeout: self.oci_fetch_timeout,
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

/// Appends the flags the reference reads from its environment variables
/// when the command line does not give them. `MAX_RECV_MESSAGE_SIZE` is in
/// MiB, as in the reference; the SDK's flag is in bytes.
fn with_env_flags(mut args: Vec<String>, env: impl Fn(&str) -> Option<String>) -> Vec<String> {
    for (variable, flag, takes_value) in FLAG_ENV {
        let given = args
            .iter()
            .any(|a| a == flag || a.starts_with(&format!("{flag}=")));
        let Some(value) = env(variable).filter(|v| !v.is_empty()) else {
            continue;
        };
        if given {
            continue;
        }
        if !takes_value {
            if matches!(value.as_str(), "true" | "True" | "TRUE" | "1") {
                args.insert(1.min(args.len()), flag.to_owned());
            }
            continue;
        }
        let value = if variable == "MAX_RECV_MESSAGE_SIZE" {
            match value.parse::<usize>() {
                Ok(mib) => (mib << 20).to_string(),
                Err(_) => value,
            }
        } else {
            value
        };
        // Right after the program name: before a subcommand, whose own
        // arguments these are not.
        args.insert(1.min(args.len()), format!("{flag}={value}"));
    }
    args
}

#[cfg(test)]
mod env_tests {
    use super::*;

    fn parse(args: &[&str], env: &[(&str, &str)]) -> Cli {
        let args = args.iter().map(|s| (*s).to_owned()).collect();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Cli::parse_from(with_env_flags(args, |name| {
            env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        }))
    }

    #[test]
    fn the_reference_environment_variables_set_flags_the_command_line_leaves_out() {
        let cli = parse(
            &["function-starlark"],
            &[
                ("FUNCTION_ADDRESS", "127.0.0.1:9555"),
                ("FUNCTION_INSECURE", "true"),
                ("MAX_RECV_MESSAGE_SIZE", "8"),
            ],
        );
        assert_eq!(cli.sdk.address, "127.0.0.1:9555");
        assert!(cli.sdk.insecure);
        assert_eq!(cli.sdk.max_recv_message_size, Some(8 << 20));
    }

    #[test]
    fn a_flag_beats_its_environment_variable() {
        let cli = parse(
            &["function-starlark", "--address", "127.0.0.1:1"],
            &[
                ("FUNCTION_ADDRESS", "127.0.0.1:2"),
                ("FUNCTION_INSECURE", "false"),
            ],
        );
        assert_eq!(cli.sdk.address, "127.0.0.1:1");
        assert!(!cli.sdk.insecure);
    }
}
