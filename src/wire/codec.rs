//! The request and response as bytes: decoding a request whose depth was
//! checked, encoding a response, the Fatal answer of a job that ended
//! without one of its own, and the cap on the messages a response carries.
//! The handler, the transport and the runner all read and write them here.

use std::fmt::Write as _;

use bytes::Bytes;
use function_sdk_rust::proto::v1::RunFunctionResponse;
use function_sdk_rust::response;

use super::job::{Answer, Outcome, Refusal};
use crate::apply::EncodedBodies;
use crate::error::Error;
use crate::request::Request;

/// The longest message a result or condition carries, in bytes. A
/// message is read by people in `kubectl describe`; a longer one (a
/// script can `fail()` with 100 MB) is cut, saying so.
pub const MAX_MESSAGE_BYTES: usize = 64 << 10;

/// How a cut message ends (after ` ... [truncated: N`).
pub(crate) const TRUNCATED_END: &str = " bytes in all]";

/// Cuts `text` to [`MAX_MESSAGE_BYTES`], at a character boundary.
pub fn truncate(text: &mut String) {
    truncate_to(text, MAX_MESSAGE_BYTES);
}

/// Cuts `text` to `most` bytes, at a character boundary, saying so.
pub(crate) fn truncate_to(text: &mut String, most: usize) {
    if text.len() <= most {
        return;
    }
    let total = text.len();
    let mut cut = most;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    let _ = write!(text, " ... [truncated: {total}{TRUNCATED_END}");
}

/// Cuts every message of the response (see [`MAX_MESSAGE_BYTES`]).
pub fn truncate_messages(rsp: &mut RunFunctionResponse) {
    for result in &mut rsp.results {
        truncate(&mut result.message);
    }
    for condition in &mut rsp.conditions {
        if let Some(message) = &mut condition.message {
            truncate(message);
        }
    }
}

/// The request. Its depth was checked by the server before it made a job
/// of it (`StarlarkFunction::handle_bytes_within`): protobuf decodes it
/// without a recursion limit, and walking a 1 MB request again would cost
/// 6% of a run reading 200 observed resources.
pub fn decode(bytes: &Bytes) -> Result<Request, Refusal> {
    debug_assert!(
        super::depth::check_request(bytes).is_ok(),
        "a job's request is checked for depth before it is run"
    );
    Request::decode(bytes).map_err(|e| Refusal {
        code: tonic::Code::InvalidArgument as i32,
        message: format!("cannot decode the RunFunctionRequest: {e}"),
    })
}

/// The response as bytes.
pub fn encode(rsp: RunFunctionResponse) -> Bytes {
    super::response::encode_response(rsp, EncodedBodies::new())
}

/// The outcome class of a failure.
pub fn outcome_of(e: &Error) -> Outcome {
    match e {
        Error::Fatal(_) => Outcome::Fatal,
        Error::StepLimit => Outcome::StepLimit,
        Error::MemoryLimit { .. } => Outcome::HeapLimit,
        Error::TimeLimit { .. } => Outcome::TimeLimit,
        Error::Input(_)
        | Error::MissingSource
        | Error::ScriptConfig(_)
        | Error::Observed { .. }
        | Error::Globals { .. }
        | Error::SequencingTtl { .. } => Outcome::InputError,
        Error::Modules(_) => Outcome::ModuleError,
        Error::Internal(_) => Outcome::Internal,
        Error::Compile(_)
        | Error::Runtime(_)
        | Error::Dependency(_)
        | Error::Dxr(_)
        | Error::Context(_)
        | Error::Output(_)
        | Error::Operation(_) => Outcome::ScriptError,
    }
}

/// The answer of a job that ended without one of its own (a run stopped
/// from outside, a worker that died): a Fatal result on the request's
/// copied-forward state.
pub fn failed(request: &Bytes, error: &Error) -> Answer {
    let outcome = outcome_of(error) as i32;
    match decode(request) {
        Ok(request) => {
            let mut rsp = response::to(&request, response::DEFAULT_TTL);
            let mut message = error.to_string();
            truncate(&mut message);
            response::fatal(&mut rsp, message.clone());
            Answer {
                response: encode(rsp),
                outcome,
                failure: Some(message),
                ..Answer::default()
            }
        }
        Err(refusal) => Answer {
            status: Some(refusal),
            outcome: Outcome::InputError as i32,
            ..Answer::default()
        },
    }
}
