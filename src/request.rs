//! A RunFunctionRequest as a run reads it. The bodies of the observed
//! composite and composed resources, most of a request's bytes, stay
//! encoded: `oxr` and `observed` are converted from those bytes directly
//! (`convert`'s `encoded_struct_to_frozen`) instead of from protobuf maps
//! decoded first and dropped after, which cost more than the script did
//! (200 observed resources of 5 KB: decoding was 41% of the run,
//! converting 38%, dropping the maps 9%; `x = 1` with a small XR: a
//! quarter of the run). Everything else is decoded as usual; the few
//! places that need an observed body as a `Struct` decode that one body,
//! and the composite's few strings the run reads besides are read from
//! its bytes. A body that is not a valid `Struct` fails the run with a
//! Fatal result naming the resource (or `oxr`), where decoding the whole
//! request up front would refuse the call.

use std::collections::HashMap;
use std::ops::Deref;

use bytes::{Buf, Bytes};
use function_sdk_rust::proto::v1::{Resource, RunFunctionRequest, State};
use pbjson_types::Struct;
use prost::Message;
use prost::encoding::{DecodeContext, decode_key, skip_field};

/// `RunFunctionRequest.observed`.
const OBSERVED_TAG: u32 = 2;

/// `RunFunctionRequest.input`: the server reads it (`wire::job::RequestHead`)
/// and hands the run what it found; a run has no use for it.
const INPUT_TAG: u32 = 4;

/// A decoded request whose observed composed resources' bodies may still
/// be encoded.
#[derive(Debug, Default, Clone)]
pub struct Request {
    /// The request; an observed composed resource whose body is in
    /// `bodies` has none here.
    proto: RunFunctionRequest,
    /// Encoded `google.protobuf.Struct` bodies of observed composed
    /// resources, by name.
    bodies: HashMap<String, Bytes>,
    /// The observed composite's body, encoded (then the request has none).
    composite: Option<Bytes>,
}

/// The observed composite's strings a run reads besides `oxr`: for the
/// log and the metrics, and the namespace that says which kind of Usage
/// protects its composed resources.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CompositeHead<'a> {
    pub kind: &'a str,
    pub name: &'a str,
    /// Empty for a cluster-scoped composite.
    pub namespace: &'a str,
}

/// Where an observed body is.
pub enum Body<'a> {
    /// Still encoded.
    Encoded(&'a [u8]),
    /// Decoded (a request built in memory, or one with no body).
    Decoded(&'a Struct),
}

static EMPTY: std::sync::LazyLock<Struct> = std::sync::LazyLock::new(Struct::default);

/// `State` as it is read here: composed resources keep their bodies encoded.
#[derive(Clone, PartialEq, Message)]
struct EncodedState {
    #[prost(message, optional, tag = "1")]
    composite: Option<EncodedResource>,
    #[prost(map = "string, message", tag = "2")]
    resources: HashMap<String, EncodedResource>,
}

/// `Resource` with its body encoded. A body given in several pieces is
/// their concatenation, which protobuf defines as their merge.
#[derive(Clone, PartialEq, Message)]
struct EncodedResource {
    #[prost(bytes = "bytes", repeated, tag = "1")]
    resource: Vec<Bytes>,
    #[prost(map = "string, bytes", tag = "2")]
    connection_details: HashMap<String, Vec<u8>>,
    #[prost(enumeration = "function_sdk_rust::proto::v1::Ready", tag = "3")]
    ready: i32,
}

impl EncodedResource {
    /// The resource without its body, and the body (its pieces joined).
    fn split(self) -> (Resource, Option<Bytes>) {
        let body = match self.resource.len() {
            0 => None,
            1 => self.resource.into_iter().next(),
            _ => Some(self.resource.concat().into()),
        };
        let resource = Resource {
            resource: None,
            connection_details: self.connection_details,
            ready: self.ready,
        };
        (resource, body)
    }
}

impl Request {
    /// Decodes a request, leaving observed composed resources' bodies
    /// encoded and the function input out (`input` is `None`: the server
    /// decoded it, and a run has no use for it; its text grows with the
    /// script and inline modules). Errors are
    /// those of decoding the whole request, except inside those bodies
    /// (converting them reports those) and inside the input (the server
    /// reported those).
    pub fn decode(bytes: &Bytes) -> Result<Request, prost::DecodeError> {
        // Pieces split at field boundaries merge into what the whole
        // would decode to.
        let (rest, observed) = split_request(bytes)?;
        let mut proto = RunFunctionRequest::default();
        for piece in rest {
            proto.merge(piece)?;
        }
        if observed.is_empty() {
            return Ok(Request::from(proto));
        }
        let mut state = EncodedState::default();
        for piece in observed {
            state.merge(piece)?;
        }
        let mut bodies = HashMap::with_capacity(state.resources.len());
        let mut resources = HashMap::with_capacity(state.resources.len());
        for (name, r) in state.resources {
            let (resource, body) = r.split();
            if let Some(body) = body {
                bodies.insert(name.clone(), body);
            }
            resources.insert(name, resource);
        }
        let (composite, composite_body) = state.composite.map(EncodedResource::split).unzip();
        proto.observed = Some(State {
            composite,
            resources,
        });
        Ok(Request {
            proto,
            bodies,
            composite: composite_body.flatten(),
        })
    }

    /// Where the observed composite's body is (an empty struct when the
    /// request has none).
    pub fn composite_body(&self) -> Body<'_> {
        match &self.composite {
            Some(bytes) => Body::Encoded(bytes),
            None => Body::Decoded(
                self.proto
                    .observed
                    .as_ref()
                    .and_then(|o| o.composite.as_ref())
                    .and_then(|c| c.resource.as_ref())
                    .unwrap_or(&EMPTY),
            ),
        }
    }

    /// Whether the request comes from an Operation rather than a
    /// composite's reconcile. The proto has no field that says so:
    /// Crossplane's composite reconciler always sends the observed
    /// composite, and its Operation controller sends nothing observed. Both
    /// come from Crossplane 2, which advertises its capabilities on every
    /// request; a request with neither (one written by hand, or Crossplane
    /// 1's) runs as a composition, as it always has.
    pub fn is_operation(&self) -> bool {
        self.proto
            .meta
            .as_ref()
            .is_some_and(|meta| !meta.capabilities.is_empty())
            && self.composite.is_none()
            && self
                .proto
                .observed
                .as_ref()
                .and_then(|o| o.composite.as_ref())
                .is_none()
    }

    /// The observed composite's strings a run reads besides `oxr` (each
    /// empty when missing or not a string).
    pub fn composite_head(&self) -> CompositeHead<'_> {
        let paths: [&[&str]; 3] = [&["kind"], &["metadata", "name"], &["metadata", "namespace"]];
        let found = match self.composite_body() {
            Body::Encoded(bytes) => crate::convert::encoded_strings_at(bytes, paths),
            Body::Decoded(body) => paths.map(|path| crate::convert::string_at(body, path)),
        };
        let [kind, name, namespace] = found.map(Option::unwrap_or_default);
        CompositeHead {
            kind,
            name,
            namespace,
        }
    }

    /// Where the body of the observed composed resource `name` is; `None`
    /// when it is not observed.
    pub fn observed_body(&self, name: &str) -> Option<Body<'_>> {
        let observed = self.proto.observed.as_ref()?.resources.get(name)?;
        Some(match self.bodies.get(name) {
            Some(bytes) => Body::Encoded(bytes),
            None => Body::Decoded(observed.resource.as_ref().unwrap_or(&EMPTY)),
        })
    }

    /// The body of the observed composed resource `name`, decoded; `None`
    /// when it is not observed. A body that does not decode reads as
    /// empty: converting it for the script reports the error.
    pub fn observed_struct(&self, name: &str) -> Option<Struct> {
        Some(match self.observed_body(name)? {
            Body::Encoded(bytes) => Struct::decode(bytes).unwrap_or_default(),
            Body::Decoded(body) => body.clone(),
        })
    }
}

impl From<RunFunctionRequest> for Request {
    fn from(proto: RunFunctionRequest) -> Self {
        Request {
            proto,
            bodies: HashMap::new(),
            composite: None,
        }
    }
}

impl Deref for Request {
    type Target = RunFunctionRequest;

    fn deref(&self) -> &RunFunctionRequest {
        &self.proto
    }
}

/// The request's fields but `observed` and `input`, and the contents of
/// `observed` (given more than once, protobuf merges them), as views of
/// `bytes`.
fn split_request(bytes: &Bytes) -> Result<(Vec<Bytes>, Vec<Bytes>), prost::DecodeError> {
    let mut buf = bytes.clone();
    let mut kept: Vec<(usize, usize)> = Vec::new();
    let mut observed: Vec<Bytes> = Vec::new();
    let whole = bytes.len();
    while buf.has_remaining() {
        let start = whole - buf.remaining();
        let (tag, wire_type) = decode_key(&mut buf)?;
        if tag == OBSERVED_TAG {
            let mut piece = Bytes::new();
            prost::encoding::bytes::merge(
                wire_type,
                &mut piece,
                &mut buf,
                DecodeContext::default(),
            )?;
            observed.push(piece);
        } else {
            skip_field(wire_type, tag, &mut buf, DecodeContext::default())?;
            if tag == INPUT_TAG {
                continue;
            }
            let end = whole - buf.remaining();
            match kept.last_mut() {
                Some((_, last_end)) if *last_end == start => *last_end = end,
                _ => kept.push((start, end)),
            }
        }
    }
    let rest = kept
        .into_iter()
        .map(|(start, end)| bytes.slice(start..end))
        .collect();
    Ok((rest, observed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resource(body: &serde_json::Value) -> Resource {
        Resource {
            resource: Some(serde_json::from_value(body.clone()).unwrap()),
            ..Resource::default()
        }
    }

    fn sample() -> RunFunctionRequest {
        let mut observed = State {
            composite: Some(resource(&json!({"kind": "XR", "spec": {"a": 1}}))),
            ..State::default()
        };
        observed
            .resources
            .insert("bucket".into(), resource(&json!({"kind": "Bucket"})));
        observed.resources.insert(
            "ready".into(),
            Resource {
                ready: 1,
                ..Resource::default()
            },
        );
        RunFunctionRequest {
            observed: Some(observed),
            meta: Some(function_sdk_rust::proto::v1::RequestMeta {
                tag: "t".into(),
                ..Default::default()
            }),
            input: Some(serde_json::from_value(json!({"source": "x = 1"})).unwrap()),
            context: Some(serde_json::from_value(json!({"k": "v"})).unwrap()),
            ..RunFunctionRequest::default()
        }
    }

    #[test]
    fn everything_but_observed_bodies_and_the_input_decodes_as_before() {
        let proto = sample();
        let bytes = Bytes::from(proto.encode_to_vec());
        let request = Request::decode(&bytes).unwrap();
        assert_eq!(request.input, None);
        assert_eq!(request.context, proto.context);
        assert_eq!(request.meta, proto.meta);
        let observed = request.observed.as_ref().unwrap();
        let expected = proto.observed.as_ref().unwrap().composite.clone().unwrap();
        assert_eq!(
            observed.composite,
            Some(Resource {
                resource: None,
                ..expected.clone()
            })
        );
        assert_eq!(composite_struct(&request), expected.resource.unwrap());
        assert_eq!(observed.resources["ready"].ready, 1);
        assert_eq!(observed.resources["bucket"].resource, None);
        for name in ["bucket", "ready"] {
            assert_eq!(
                request.observed_struct(name),
                proto.observed.as_ref().unwrap().resources[name]
                    .resource
                    .clone()
                    .or(Some(Struct::default())),
                "{name}"
            );
        }
        assert_eq!(request.observed_struct("absent"), None);
    }

    #[test]
    fn repeated_fields_merge_as_protobuf_merges_them() {
        // Two `observed` fields, and the second redefines a resource: the
        // map entry is replaced, as a protobuf decoder does.
        let first = sample();
        let mut second = RunFunctionRequest::default();
        let mut state = State::default();
        state
            .resources
            .insert("bucket".into(), resource(&json!({"kind": "Other"})));
        second.observed = Some(state);
        let mut bytes = first.encode_to_vec();
        bytes.extend(second.encode_to_vec());
        let bytes = Bytes::from(bytes);
        let expected = RunFunctionRequest::decode(bytes.clone()).unwrap();
        let request = Request::decode(&bytes).unwrap();
        assert_eq!(
            request.observed_struct("bucket"),
            expected.observed.as_ref().unwrap().resources["bucket"]
                .resource
                .clone()
        );
        assert_eq!(
            Some(composite_struct(&request)),
            expected
                .observed
                .as_ref()
                .unwrap()
                .composite
                .clone()
                .unwrap()
                .resource
        );
        assert_eq!(request.input, None);
        assert_eq!(request.context, expected.context);
    }

    /// The observed composite's body, decoded.
    fn composite_struct(request: &Request) -> Struct {
        match request.composite_body() {
            Body::Encoded(bytes) => Struct::decode(bytes).unwrap(),
            Body::Decoded(body) => body.clone(),
        }
    }

    #[test]
    fn the_composite_head_reads_the_same_from_bytes_as_decoded() {
        let with_composite = |body: serde_json::Value| {
            let mut proto = sample();
            proto.observed.as_mut().unwrap().composite = Some(resource(&body));
            proto
        };
        let full = json!({
            "kind": "XBucket",
            "metadata": {
                "name": "b-1",
                "namespace": "team-a",
                "labels": {"other": "x"},
            },
        });
        let cases = [
            (full, ["XBucket", "b-1", "team-a"]),
            (
                json!({"kind": 3, "metadata": {"name": ["n"], "namespace": 1}}),
                ["", "", ""],
            ),
            (json!({"metadata": {"namespace": "ns"}}), ["", "", "ns"]),
            (json!({}), ["", "", ""]),
        ];
        for (body, [kind, name, namespace]) in cases {
            let proto = with_composite(body.clone());
            let expected = CompositeHead {
                kind,
                name,
                namespace,
            };
            let decoded = Request::from(proto.clone());
            assert_eq!(decoded.composite_head(), expected, "{body}");
            let bytes = Bytes::from(proto.encode_to_vec());
            let encoded = Request::decode(&bytes).unwrap();
            assert!(matches!(encoded.composite_body(), Body::Encoded(_)));
            assert_eq!(encoded.composite_head(), expected, "{body}");
        }
        // Sent in two pieces, the composite's body merges: the name from
        // the first, the kind replaced by the second.
        let mut bytes =
            with_composite(json!({"kind": "A", "metadata": {"name": "n"}})).encode_to_vec();
        let second = RunFunctionRequest {
            observed: Some(State {
                composite: Some(resource(&json!({"kind": "B"}))),
                ..State::default()
            }),
            ..RunFunctionRequest::default()
        };
        bytes.extend(second.encode_to_vec());
        let head = Request::decode(&Bytes::from(bytes)).unwrap();
        assert_eq!(
            (head.composite_head().kind, head.composite_head().name),
            ("B", "n")
        );
    }

    #[test]
    fn a_cut_request_is_refused() {
        let bytes = sample().encode_to_vec();
        let cut = Bytes::from(bytes[..bytes.len() - 3].to_vec());
        assert!(Request::decode(&cut).is_err());
        assert!(RunFunctionRequest::decode(cut).is_err());
    }
}
