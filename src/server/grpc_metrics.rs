//! The gRPC server series the Go SDK's servers expose (grpc-prometheus's
//! unary interceptor): `grpc_server_started_total`,
//! `grpc_server_handled_total`, `grpc_server_msg_received_total` and
//! `grpc_server_msg_sent_total`, labelled `grpc_type`, `grpc_service`,
//! `grpc_method` (and `grpc_code` for handled), so dashboards built for Go
//! functions keep working. RunFunction is counted; every series starts at
//! zero.

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

type Labels = Vec<(&'static str, &'static str)>;

/// The four counter families.
#[derive(Clone, Default)]
pub struct GrpcMetrics {
    started: Family<Labels, Counter>,
    handled: Family<Labels, Counter>,
    received: Family<Labels, Counter>,
    sent: Family<Labels, Counter>,
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
            m.started.clone(),
        );
        registry.register(
            "grpc_server_handled",
            "Total number of RPCs completed on the server, regardless of success or failure",
            m.handled.clone(),
        );
        registry.register(
            "grpc_server_msg_received",
            "Total number of RPC stream messages received on the server",
            m.received.clone(),
        );
        registry.register(
            "grpc_server_msg_sent",
            "Total number of gRPC stream messages sent by the server",
            m.sent.clone(),
        );
        let labels = method("RunFunction");
        let _ = m.started.get_or_create(&labels);
        let _ = m.received.get_or_create(&labels);
        let _ = m.sent.get_or_create(&labels);
        for code in CODES {
            let mut with_code = labels.clone();
            with_code.push(("grpc_code", code));
            let _ = m.handled.get_or_create(&with_code);
        }
        m
    }

    /// Counts a RunFunction call as started; the returned call counts it
    /// handled, as Canceled if it is dropped before [`Call::done`].
    pub fn start(&self) -> Call {
        let labels = method("RunFunction");
        self.started.get_or_create(&labels).inc();
        self.received.get_or_create(&labels).inc();
        Call {
            metrics: self.clone(),
            done: false,
        }
    }
}

/// One RunFunction call being counted.
pub struct Call {
    metrics: GrpcMetrics,
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
        let name = usize::try_from(code)
            .ok()
            .and_then(|c| CODES.get(c))
            .copied()
            .unwrap_or("Unknown");
        let mut labels = method("RunFunction");
        if code == 0 {
            self.metrics.sent.get_or_create(&labels).inc();
        }
        labels.push(("grpc_code", name));
        self.metrics.handled.get_or_create(&labels).inc();
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
    }
}
