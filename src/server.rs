//! The gRPC server: RunFunction (bytes in, bytes out, see [`service`]),
//! health, reflection, mTLS, the Prometheus endpoint, and a graceful
//! shutdown.
//!
//! This is assembled here from the SDK's protocol pieces rather than with
//! the SDK's `Server`, because RunFunction must see its request as bytes:
//! protobuf decoding recurses once per nested message, so the request is
//! checked for depth (see [`crate::wire::depth`]) before anything
//! decodes it, and decoded in the worker that runs the script.
//!
//! Health reports NOT_SERVING until the first worker is ready and again
//! from the moment a SIGTERM arrives: the server then stops accepting
//! connections, lets the calls in flight finish within the grace period,
//! and exits.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::registry::Registry;
use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};
use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;

use crate::cli::{Cli, Isolation};
use crate::function::StarlarkFunction;
use crate::input::Settings;
use crate::loader::oci::OciResolver;
use crate::metrics::Metrics;
use crate::runner::Runtime;
use crate::transport::{Engine, worker};

pub mod codec;
pub mod grpc_metrics;
pub mod logging;
pub mod metrics_http;
pub mod service;
pub mod tidy;

use grpc_metrics::GrpcMetrics;
use service::FunctionService;

/// Why the server could not serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// `--address` is not a socket address.
    #[error("cannot parse listen address {address:?}: {source}")]
    Address {
        /// The address given.
        address: String,
        /// The parser's complaint.
        source: std::net::AddrParseError,
    },
    /// Neither `--tls-certs-dir` nor `--insecure` was given.
    #[error("no credentials were provided - supply --tls-certs-dir or use --insecure")]
    MissingTlsCertsDir,
    /// A certificate or key could not be read.
    #[error("cannot read TLS certificate or key {path}: {source}")]
    Certificate {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The async runtime could not be started.
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    /// The worker processes could not be started.
    #[error("cannot start the script workers: {0}")]
    Workers(std::io::Error),
    /// The gRPC server failed.
    #[error("gRPC server error: {0}")]
    Transport(#[from] tonic::transport::Error),
    /// The reflection service could not be built.
    #[error("cannot build gRPC reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
}

/// Stack of the threads that decode requests and compose error answers:
/// both recurse with the request's nesting, which is bounded
/// ([`crate::wire::depth`]) but deeper than the default 2 MiB holds.
const STACK: usize = 16 << 20;

/// Serves the function until SIGTERM or SIGINT, on `--server-threads`
/// threads.
///
/// With one thread (the default) the runtime is tokio's current-thread
/// one, on a thread of its own with a deep stack: on a 2-core VM where the
/// worker processes share the cores, a second server thread mostly added
/// wake-ups and work stealing between the two (docs/architecture.md, "One
/// server thread").
pub fn run(cli: Cli) -> Result<(), ServeError> {
    let threads = cli.server_threads();
    let server = std::thread::Builder::new()
        .name("server".to_owned())
        .stack_size(STACK)
        .spawn(move || {
            let mut builder = if threads == 1 {
                tokio::runtime::Builder::new_current_thread()
            } else {
                let mut builder = tokio::runtime::Builder::new_multi_thread();
                builder.worker_threads(threads);
                builder
            };
            let runtime = builder
                .enable_all()
                .thread_stack_size(STACK)
                .build()
                .map_err(ServeError::Runtime)?;
            runtime.block_on(serve(cli))
        })
        .map_err(ServeError::Runtime)?;
    server
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Serves the function until SIGTERM or SIGINT.
pub async fn serve(cli: Cli) -> Result<(), ServeError> {
    let address: SocketAddr = cli
        .sdk
        .address
        .parse()
        .map_err(|source| ServeError::Address {
            address: cli.sdk.address.clone(),
            source,
        })?;
    let mut registry = Registry::default();
    let metrics = Metrics::register(&mut registry);
    let grpc_metrics = GrpcMetrics::register(&mut registry);
    let limits = cli.limits();
    let engine = match cli.isolation {
        Isolation::Processes => Engine::processes(
            worker::Config::new(&limits, cli.cache_size, cli.sdk.debug)
                .polling(cli.worker_poll_micros),
            Some(Duration::from_secs(cli.worker_idle_seconds)),
        )
        .map_err(ServeError::Workers)?,
        Isolation::Threads => Engine::threads(Arc::new(Runtime::new(limits, cli.cache_size))),
    };
    let engine = Arc::new(engine);
    let settings = Settings::from_process(cli.scripts_dir.clone());
    let oci = Arc::new(OciResolver::new(cli.oci()));
    let function = StarlarkFunction::with_engine(engine.clone(), settings, metrics).with_oci(oci);
    let max_request = cli.sdk.max_recv_message_size.unwrap_or(4 << 20);
    let service = FunctionService::new(function, grpc_metrics, max_request);

    // HTTP/2 lets a client send 64 KiB (a stream's and the connection's
    // default window) before the server acknowledges it: a request of
    // 1 MB (200 observed resources) took 16 round trips, and 16 calls at
    // once shared one such window. Windows of the largest request let a
    // call arrive in one go; the bodies are read as they come either way.
    let window = u32::try_from(max_request).unwrap_or(u32::MAX);
    let mut builder = Server::builder()
        .initial_stream_window_size(window)
        .initial_connection_window_size(window.saturating_mul(2));
    if !cli.sdk.insecure {
        let dir = cli
            .sdk
            .tls_certs_dir
            .as_deref()
            .ok_or(ServeError::MissingTlsCertsDir)?;
        builder = builder.tls_config(tls_config(dir)?)?;
    }
    let reflection_v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(function_sdk_rust::proto::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(function_sdk_rust::proto::FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;
    let (health, health_service) = tonic_health::server::health_reporter();
    set_health(&health, ServingStatus::NotServing).await;

    if !cli.sdk.metrics_address.is_empty() {
        let metrics_address = cli.sdk.metrics_address.clone();
        let registry = Arc::new(registry);
        tokio::spawn(async move {
            if let Err(e) = metrics_http::serve(&metrics_address, registry).await {
                tracing::error!(error = %e, "cannot serve metrics");
            }
        });
    }

    // Ready once a worker is: the first request must not wait for one.
    {
        let engine = engine.clone();
        let health = health.clone();
        tokio::spawn(async move {
            match engine.warm_up().await {
                Ok(()) => {
                    set_health(&health, ServingStatus::Serving).await;
                    tracing::info!("function is ready");
                }
                Err(e) => tracing::error!(error = %e, "cannot start a script worker"),
            }
        });
    }

    tokio::spawn(tidy::when_quiet(crate::meter::QUIET_BEFORE_RELEASE));

    tracing::info!(
        %address,
        insecure = cli.sdk.insecure,
        server_threads = cli.server_threads(),
        "serving FunctionRunnerService"
    );
    let grace = Duration::from_secs(cli.shutdown_grace_seconds);
    let (draining_tx, draining_rx) = tokio::sync::oneshot::channel::<()>();
    let shutdown = {
        let health = health.clone();
        async move {
            shutdown_signal().await;
            set_health(&health, ServingStatus::NotServing).await;
            tracing::info!(
                grace_seconds = grace.as_secs(),
                "shutting down: finishing calls in flight"
            );
            let _ = draining_tx.send(());
        }
    };
    let serving = builder
        .add_service(service)
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .serve_with_shutdown(address, shutdown);
    tokio::pin!(serving);
    tokio::select! {
        result = &mut serving => result?,
        () = async {
            // Only once draining began does the grace period run.
            if draining_rx.await.is_ok() {
                tokio::time::sleep(grace).await;
            } else {
                std::future::pending::<()>().await;
            }
        } => {
            tracing::warn!(grace_seconds = grace.as_secs(), "calls still in flight at the end of the grace period were abandoned");
        }
    }
    tracing::info!("stopped");
    Ok(())
}

/// Sets the overall ("") and the FunctionRunnerService health status.
async fn set_health(reporter: &HealthReporter, status: ServingStatus) {
    for service in ["", grpc_metrics::SERVICE] {
        reporter.set_service_status(service, status).await;
    }
}

fn tls_config(dir: &Path) -> Result<ServerTlsConfig, ServeError> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read(&path).map_err(|source| ServeError::Certificate { path, source })
    };
    Ok(ServerTlsConfig::new()
        .identity(Identity::from_pem(read("tls.crt")?, read("tls.key")?))
        .client_ca_root(Certificate::from_pem(read("ca.crt")?))
        .client_auth_optional(false))
}

async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        () = terminate => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
