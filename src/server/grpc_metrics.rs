//! The gRPC server series the Go SDK's servers expose (grpc-prometheus's
//! unary interceptor): `grpc_server_started_total`,
//! `grpc_server_handled_total`, `grpc_server_msg_received_total` and
//! `grpc_server_msg_sent_total`, labelled `grpc_type`, `grpc_service`,
//! `grpc_method` (and `grpc_code` for handled), so dashboards built for Go
//! functions keep working. RunFunction is counted; every series starts at
//! zero.

use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// The service RunFunction belongs to.
pub const SERVICE: &str = "apiextensions.fn.proto.v1.FunctionRunnerService";

/// google.golang.org/grpc/codes names, by wire value.
const CODES: [&str; 17] = [
    "OK",
    "Canceled",
    "Unknown",
    "InvalidArgument",
    "DeadlineExceeded",
    "NotFound",
    "AlreadyExists",
    "PermissionDenied",
    "ResourceExhausted",
    "FailedPrecondition",
    "Aborted",
    "OutOfRange",
    "Unimplemented",
    "Internal",
    "Unavailable",
    "DataLoss",
    "Unauthenticated",
];

/// Where `Unknown` is in [`CODES`]: the code a status outside them counts as.
const UNKNOWN: usize = 2;

type Labels = Vec<(&'static str, &'static str)>;

/// The four counter families, and the RunFunction series of each: every
/// series exists from the start, so a call counts itself through handles
/// kept here rather than finding its series by label on every call.
#[derive(Clone)]
pub struct GrpcMetrics {
    families: Families,
    run: Arc<RunFunctionSeries>,
}

#[derive(Clone, Default)]
struct Families {
    started: Family<Labels, Counter>,
    handled: Family<Labels, Counter>,
    received: Family<Labels, Counter>,
    sent: Family<Labels, Counter>,
}

/// RunFunction's series: they share their values with the families'.
struct RunFunctionSeries {
    started: Counter,
    received: Counter,
    sent: Counter,
    /// By code, in the order of [`CODES`].
    handled: Vec<Counter>,
}

fn method(name: &'static str) -> Labels {
    vec![
        ("grpc_type", "unary"),
        ("grpc_service", SERVICE),
        ("grpc_method", name),
    ]
}

impl GrpcMetrics {
    /// Registers the families in `registry`, every series at zero.
    pub fn register(registry: &mut Registry) -> GrpcMetrics {
        let m = GrpcMetrics::default();
        registry.register(
            "grpc_server_started",
            "Total number of RPCs started on the server",
            m.families.started.clone(),
        );
        registry.register(
            "grpc_server_handled",
            "Total number of RPCs completed on the server, regardless of success or failure",
            m.families.handled.clone(),
        );
        registry.register(
            "grpc_server_msg_received",
            "Total number of RPC stream messages received on the server",
            m.families.received.clone(),
        );
        registry.register(
            "grpc_server_msg_sent",
            "Total number of gRPC stream messages sent by the server",
            m.families.sent.clone(),
        );
        m
    }

    /// Counts a RunFunction call as started; the returned call counts it
    /// handled, as Canceled if it is dropped before [`Call::done`].
    pub fn start(&self) -> Call {
        self.run.started.inc();
        self.run.received.inc();
        Call {
            run: Arc::clone(&self.run),
            done: false,
        }
    }
}

impl Default for GrpcMetrics {
    /// Families registered nowhere, their RunFunction series created.
    fn default() -> Self {
        let families = Families::default();
        let labels = method("RunFunction");
        let series = |family: &Family<Labels, Counter>, labels: &Labels| {
            family.get_or_create(labels).clone()
        };
        let handled = CODES
            .iter()
            .map(|code| {
                let mut with_code = labels.clone();
                with_code.push(("grpc_code", code));
                series(&families.handled, &with_code)
            })
            .collect();
        let run = RunFunctionSeries {
            started: series(&families.started, &labels),
            received: series(&families.received, &labels),
            sent: series(&families.sent, &labels),
            handled,
        };
        GrpcMetrics {
            families,
            run: Arc::new(run),
        }
    }
}

/// One RunFunction call being counted.
pub struct Call {
    run: Arc<RunFunctionSeries>,
    done: bool,
}

impl Call {
    /// Counts the call handled with the gRPC status `code`.
    pub fn done(mut self, code: i32) {
        self.report(code);
    }

    fn report(&mut self, code: i32) {
        if self.done {
            return;
        }
        self.done = true;
        if code == 0 {
            self.run.sent.inc();
        }
        let index = usize::try_from(code)
            .ok()
            .filter(|&c| c < CODES.len())
            .unwrap_or(UNKNOWN);
        self.run.handled[index].inc();
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        // The caller went away before an answer: Canceled, as the Go
        // interceptor reported a canceled context.
        self.report(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(registry: &Registry, needle: &str) -> u64 {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, registry).unwrap();
        out.lines()
            .find(|l| {
                l.starts_with(needle.split('{').next().unwrap())
                    && l.contains(needle.split('{').nth(1).unwrap_or(""))
            })
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
            .unwrap_or(u64::MAX)
    }

    #[test]
    fn calls_are_counted_by_code_and_a_dropped_one_is_canceled() {
        let mut registry = Registry::default();
        let m = GrpcMetrics::register(&mut registry);
        assert_eq!(value(&registry, "grpc_server_started_total{"), 0);
        m.start().done(0);
        m.start().done(3);
        drop(m.start());
        assert_eq!(value(&registry, "grpc_server_started_total{"), 3);
        assert_eq!(value(&registry, "grpc_server_msg_sent_total{"), 1);
        assert_eq!(
            value(
                &registry,
                "grpc_server_handled_total{grpc_code=\"InvalidArgument\""
            ),
            1
        );
        assert_eq!(
            value(
                &registry,
                "grpc_server_handled_total{grpc_code=\"Canceled\""
            ),
            1
        );
        assert_eq!(
            value(&registry, "grpc_server_handled_total{grpc_code=\"OK\""),
            1
        );
        assert_eq!(CODES[UNKNOWN], "Unknown");
        m.start().done(99);
        assert_eq!(
            value(&registry, "grpc_server_handled_total{grpc_code=\"Unknown\""),
            1
        );
        // A clone counts into the same series.
        m.clone().start().done(0);
        assert_eq!(value(&registry, "grpc_server_started_total{"), 5);
    }
}
