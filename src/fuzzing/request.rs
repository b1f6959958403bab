//! The whole request path, as the server takes a call: bytes, the depth
//! check, the decoding of the request and its input, the modules gathered,
//! the script run on a worker thread with the function's budgets, the
//! response encoded.
//!
//! The budgets are the defaults (ticks, heap, call depth) but for time: 2 s
//! a run, so that libFuzzer's `-timeout` (10 s in `scripts/fuzz.sh`) marks
//! a run that outlives it. One run at a time, so that a run that ignores
//! its deadline holds the only thread and the next input times out. OCI
//! registries get a millisecond to answer and mounted scripts are read from
//! a folder that does not exist: the target does no I/O that matters.
//!
//! Each input is answered, within the time limit and its grace, with a
//! response that decodes or with a gRPC status.

use std::path::PathBuf;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use function_sdk_rust::proto::v1::RunFunctionResponse;
use prost::Message;

use crate::function::StarlarkFunction;
use crate::input::Settings;
use crate::limits::Limits;
use crate::loader::oci::{OciConfig, OciResolver};
use crate::metrics::Metrics;
use crate::runner::Runtime;
use crate::transport::threads::GRACE;

/// A run's time limit here.
pub const TIMEOUT: Duration = Duration::from_secs(2);

struct Harness {
    function: StarlarkFunction,
    runtime: tokio::runtime::Runtime,
}

static HARNESS: LazyLock<Harness> = LazyLock::new(|| {
    let limits = Limits {
        timeout: TIMEOUT,
        concurrency: 1,
        ..Limits::default()
    };
    let nowhere = PathBuf::from("/nonexistent/function-starlark-fuzz");
    let settings = Settings {
        scripts_dir: nowhere.clone(),
        env: Box::new(|_| None),
    };
    let oci = OciConfig {
        secrets_dir: nowhere,
        host_docker_config: None,
        connect_timeout: Duration::from_millis(1),
        read_timeout: Duration::from_millis(1),
        fetch_timeout: Duration::from_millis(10),
        ..OciConfig::default()
    };
    let runtime = Arc::new(Runtime::new(limits, 64));
    Harness {
        function: StarlarkFunction::new(runtime, settings, Metrics::default())
            .with_oci(Arc::new(OciResolver::new(oci))),
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime"),
    }
});

/// The target's body.
pub fn request(data: &[u8]) {
    let harness = &*HARNESS;
    let started = Instant::now();
    let answer = harness
        .runtime
        .block_on(harness.function.handle_bytes(Bytes::copy_from_slice(data)));
    let took = started.elapsed();
    // A second for the decoding, the modules and the response around the run.
    assert!(
        took < TIMEOUT + GRACE + Duration::from_secs(1),
        "the answer took {took:?}"
    );
    match answer {
        Ok(response) => {
            RunFunctionResponse::decode(response).expect("the response decodes");
        }
        Err(status) => assert!(!status.message().is_empty(), "a status without a message"),
    }
}
