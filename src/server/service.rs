//! The FunctionRunnerService, written against tonic's server plumbing with
//! the byte codec: `RunFunction` of the v1 API and of v1beta1, which older
//! Crossplane releases call and which has the same messages.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tonic::codegen::{Body, BoxFuture, Service, StdError, http};
use tonic::server::{Grpc, NamedService, UnaryService};
use tonic::{Code, Request, Response, Status};

use super::codec::RawCodec;
use super::grpc_metrics::GrpcMetrics;
use crate::function::StarlarkFunction;

const RUN_FUNCTION: &str = "/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction";
const RUN_FUNCTION_V1BETA1: &str =
    "/apiextensions.fn.proto.v1beta1.FunctionRunnerService/RunFunction";

/// The service.
#[derive(Clone)]
pub struct FunctionService {
    function: Arc<StarlarkFunction>,
    metrics: GrpcMetrics,
    max_request_bytes: usize,
}

impl FunctionService {
    /// Serves `function`, refusing requests over `max_request_bytes`.
    pub fn new(function: StarlarkFunction, metrics: GrpcMetrics, max_request_bytes: usize) -> Self {
        FunctionService {
            function: Arc::new(function),
            metrics,
            max_request_bytes,
        }
    }
}

impl NamedService for FunctionService {
    const NAME: &'static str = super::grpc_metrics::SERVICE;
}

struct RunFunction(Arc<StarlarkFunction>);

impl UnaryService<Bytes> for RunFunction {
    type Response = Bytes;
    type Future = BoxFuture<Response<Bytes>, Status>;

    fn call(&mut self, request: Request<Bytes>) -> Self::Future {
        let call = super::tidy::call_started();
        let function = self.0.clone();
        let deadline = request
            .metadata()
            .get("grpc-timeout")
            .and_then(|v| v.to_str().ok())
            .and_then(grpc_timeout);
        Box::pin(async move {
            let answer = function
                .handle_bytes_within(request.into_inner(), deadline)
                .await
                .map(Response::new);
            drop(call);
            answer
        })
    }
}

impl<B> Service<http::Request<B>> for FunctionService
where
    B: Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let path = request.uri().path();
        if path != RUN_FUNCTION && path != RUN_FUNCTION_V1BETA1 {
            return Box::pin(async { Ok(Status::unimplemented("no such method").into_http()) });
        }
        let function = self.function.clone();
        let call = self.metrics.start();
        let max = self.max_request_bytes;
        Box::pin(async move {
            let mut grpc = Grpc::new(RawCodec).apply_max_message_size_config(Some(max), None);
            let mut response = grpc.unary(RunFunction(function), request).await;
            // tonic refuses an oversized request with OUT_OF_RANGE before
            // the handler runs; gRPC convention (and the Go function) say
            // RESOURCE_EXHAUSTED.
            let code = status_of(response.headers());
            if code == Some(Code::OutOfRange as i32) {
                let headers = response.headers_mut();
                headers.insert("grpc-status", (Code::ResourceExhausted as i32).into());
                if let Ok(message) = http::HeaderValue::from_str(&format!(
                    "the request is larger than the {max} bytes this function accepts; raise --max-recv-message-size (MAX_RECV_MESSAGE_SIZE, in MiB)"
                )) {
                    headers.insert("grpc-message", message);
                }
                call.done(Code::ResourceExhausted as i32);
            } else {
                // A trailers-only response carries its status in the
                // headers; otherwise the handler answered and it is OK or
                // the status it returned, which tonic puts in the trailers.
                call.done(code.unwrap_or(0));
            }
            Ok(response)
        })
    }
}

/// A `grpc-timeout` header's duration: up to 8 digits and a unit (`H`
/// hours, `M` minutes, `S` seconds, `m` milliseconds, `u` microseconds,
/// `n` nanoseconds), as the gRPC protocol defines it.
fn grpc_timeout(value: &str) -> Option<Duration> {
    let unit = value.chars().last()?;
    let amount: u64 = value[..value.len() - unit.len_utf8()].parse().ok()?;
    Some(match unit {
        'H' => Duration::from_secs(amount.saturating_mul(3600)),
        'M' => Duration::from_secs(amount.saturating_mul(60)),
        'S' => Duration::from_secs(amount),
        'm' => Duration::from_millis(amount),
        'u' => Duration::from_micros(amount),
        'n' => Duration::from_nanos(amount),
        _ => return None,
    })
}

/// The numeric grpc-status in `headers`, if any.
fn status_of(headers: &http::HeaderMap) -> Option<i32> {
    headers.get("grpc-status")?.to_str().ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeouts_are_read_in_every_unit() {
        assert_eq!(grpc_timeout("2S"), Some(Duration::from_secs(2)));
        assert_eq!(grpc_timeout("1500m"), Some(Duration::from_millis(1500)));
        assert_eq!(grpc_timeout("3M"), Some(Duration::from_mins(3)));
        assert_eq!(grpc_timeout("1H"), Some(Duration::from_hours(1)));
        assert_eq!(grpc_timeout("10u"), Some(Duration::from_micros(10)));
        assert_eq!(grpc_timeout("7n"), Some(Duration::from_nanos(7)));
        assert_eq!(grpc_timeout("S"), None);
        assert_eq!(grpc_timeout("5x"), None);
    }
}
