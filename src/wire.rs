//! The wire format: what crosses between the handler, the transport and
//! the runner. A [`Job`] is the request as it arrived (its depth checked
//! by [`depth`] before anything decodes it), the gathered sources and the
//! settings; an [`Answer`] is the response as bytes and the run's costs.
//! [`codec`] decodes requests and encodes responses (through [`response`],
//! which measures every `Struct` once); [`Runs`] is what the transport
//! asks of a runner.

pub mod codec;
pub mod depth;
pub mod job;
pub mod response;

pub use job::{Answer, Job, Outcome, Runs};
