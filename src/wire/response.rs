//! Encoding the response. prost works out the length of a nested message
//! each time an enclosing message asks for it, so a `Struct` nested n
//! deep has its innermost values measured n times; composed resources are
//! such trees, and measuring them took a sixth of a run's time. Here every
//! `Struct` is measured once, its sizes kept, and written in one pass, into
//! the fields of shadow messages that have the response's tags and wire
//! types but hold the encoded structs as bytes.
//!
//! The shadows also keep every protobuf map in key order, and structs are
//! written with their fields sorted: the same response is the same bytes
//! in every process and on every platform (a `HashMap`'s order changes
//! from process to process).

use std::collections::BTreeMap;

use bytes::{BufMut, Bytes};
use function_sdk_rust::proto::v1::{
    self as pb, Condition, Requirements, ResourceSelector, ResponseMeta, RunFunctionResponse,
    SchemaSelector, resource_selector,
};
use pbjson_types::value::Kind;
use pbjson_types::{ListValue, Struct, Value};
use prost::Message;
use prost::encoding::encoded_len_varint;
use smallvec::SmallVec;

use crate::apply::EncodedBodies;

#[derive(Clone, PartialEq, Message)]
struct WireResponse {
    #[prost(message, optional, tag = "1")]
    meta: Option<ResponseMeta>,
    #[prost(message, optional, tag = "2")]
    desired: Option<WireState>,
    #[prost(message, repeated, tag = "3")]
    results: Vec<pb::Result>,
    #[prost(bytes = "bytes", optional, tag = "4")]
    context: Option<Bytes>,
    #[prost(message, optional, tag = "5")]
    requirements: Option<WireRequirements>,
    #[prost(message, repeated, tag = "6")]
    conditions: Vec<Condition>,
    #[prost(bytes = "bytes", optional, tag = "7")]
    output: Option<Bytes>,
}

#[derive(Clone, PartialEq, Message)]
struct WireState {
    #[prost(message, optional, tag = "1")]
    composite: Option<WireResource>,
    #[prost(btree_map = "string, message", tag = "2")]
    resources: BTreeMap<String, WireResource>,
}

#[derive(Clone, PartialEq, Message)]
struct WireResource {
    #[prost(bytes = "bytes", optional, tag = "1")]
    resource: Option<Bytes>,
    #[prost(btree_map = "string, bytes", tag = "2")]
    connection_details: BTreeMap<String, Vec<u8>>,
    #[prost(int32, tag = "3")]
    ready: i32,
}

#[derive(Clone, PartialEq, Message)]
struct WireRequirements {
    #[prost(btree_map = "string, message", tag = "1")]
    extra_resources: BTreeMap<String, WireSelector>,
    #[prost(btree_map = "string, message", tag = "2")]
    resources: BTreeMap<String, WireSelector>,
    #[prost(btree_map = "string, message", tag = "3")]
    schemas: BTreeMap<String, SchemaSelector>,
}

#[derive(Clone, PartialEq, Message)]
struct WireSelector {
    #[prost(string, tag = "1")]
    api_version: String,
    #[prost(string, tag = "2")]
    kind: String,
    #[prost(string, optional, tag = "3")]
    match_name: Option<String>,
    #[prost(message, optional, tag = "4")]
    match_labels: Option<WireLabels>,
    #[prost(string, optional, tag = "5")]
    namespace: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct WireLabels {
    #[prost(btree_map = "string, string", tag = "1")]
    labels: BTreeMap<String, String>,
}

/// `rsp`, encoded as prost would encode it, each composed resource named
/// in `bodies` with that encoded body.
pub fn encode_response(rsp: RunFunctionResponse, mut bodies: EncodedBodies) -> Bytes {
    let wire = WireResponse {
        meta: rsp.meta,
        desired: rsp.desired.map(|state| WireState {
            composite: state.composite.map(resource),
            resources: state
                .resources
                .into_iter()
                .map(|(name, r)| {
                    let mut encoded = resource(r);
                    if let Some(body) = bodies.remove(&name) {
                        encoded.resource = Some(body);
                    }
                    (name, encoded)
                })
                .collect(),
        }),
        results: rsp.results,
        context: rsp.context.as_ref().map(encode_struct),
        requirements: rsp.requirements.map(requirements),
        conditions: rsp.conditions,
        output: rsp.output.as_ref().map(encode_struct),
    };
    Bytes::from(wire.encode_to_vec())
}

fn resource(r: pb::Resource) -> WireResource {
    WireResource {
        resource: r.resource.as_ref().map(encode_struct),
        connection_details: r.connection_details.into_iter().collect(),
        ready: r.ready,
    }
}

fn requirements(r: Requirements) -> WireRequirements {
    let selectors = |map: std::collections::HashMap<String, ResourceSelector>| {
        map.into_iter()
            .map(|(name, s)| (name, selector(s)))
            .collect()
    };
    WireRequirements {
        extra_resources: selectors(r.extra_resources),
        resources: selectors(r.resources),
        schemas: r.schemas.into_iter().collect(),
    }
}

fn selector(s: ResourceSelector) -> WireSelector {
    let (match_name, match_labels) = match s.r#match {
        Some(resource_selector::Match::MatchName(name)) => (Some(name), None),
        Some(resource_selector::Match::MatchLabels(l)) => (
            None,
            Some(WireLabels {
                labels: l.labels.into_iter().collect(),
            }),
        ),
        None => (None, None),
    };
    WireSelector {
        api_version: s.api_version,
        kind: s.kind,
        match_name,
        match_labels,
        namespace: s.namespace,
    }
}

/// A struct's fields in name order.
fn by_name(s: &Struct) -> SmallVec<[(&String, &Value); 8]> {
    let mut fields: SmallVec<[(&String, &Value); 8]> = s.fields.iter().collect();
    fields.sort_unstable_by(|a, b| a.0.cmp(b.0));
    fields
}

/// A `Struct`'s encoding (the message's content, without tag or length).
pub fn encode_struct(s: &Struct) -> Bytes {
    let mut sizes = Vec::new();
    let len = measure_struct(s, &mut sizes);
    let mut out = Vec::with_capacity(len);
    let mut next = 0;
    write_struct(s, &mut out, &sizes, &mut next);
    debug_assert_eq!(out.len(), len, "measured and written lengths agree");
    Bytes::from(out)
}

/// The content length of a map entry. As prost does, an entry leaves out a
/// key or a value that is its type's default.
fn entry_len(key: &str, value: &Value, value_len: usize) -> usize {
    let key = if key.is_empty() {
        0
    } else {
        field_len(key.len())
    };
    let value = if value.kind.is_none() {
        0
    } else {
        field_len(value_len)
    };
    key + value
}

/// Bytes of a length-delimited field whose content takes `len`.
fn field_len(len: usize) -> usize {
    1 + encoded_len_varint(len as u64) + len
}

/// Measures `s`, recording the content length of `s` and of every
/// struct and list inside it in `sizes`, in the order they are written.
fn measure_struct(s: &Struct, sizes: &mut Vec<usize>) -> usize {
    let slot = sizes.len();
    sizes.push(0);
    let mut len = 0;
    for (key, value) in by_name(s) {
        let value_len = measure_value(value, sizes);
        len += field_len(entry_len(key, value, value_len));
    }
    sizes[slot] = len;
    len
}

fn measure_list(l: &ListValue, sizes: &mut Vec<usize>) -> usize {
    let slot = sizes.len();
    sizes.push(0);
    let len = l
        .values
        .iter()
        .map(|v| field_len(measure_value(v, sizes)))
        .sum();
    sizes[slot] = len;
    len
}

/// The content length of a `Value` message.
fn measure_value(v: &Value, sizes: &mut Vec<usize>) -> usize {
    match &v.kind {
        None => 0,
        Some(Kind::NullValue(n)) => 1 + encoded_len_varint(u64::from(n.unsigned_abs())),
        Some(Kind::NumberValue(_)) => 9,
        Some(Kind::StringValue(s)) => field_len(s.len()),
        Some(Kind::BoolValue(_)) => 2,
        Some(Kind::StructValue(s)) => field_len(measure_struct(s, sizes)),
        Some(Kind::ListValue(l)) => field_len(measure_list(l, sizes)),
    }
}

/// The content length of a `Value` message, from the sizes measured.
fn value_len(v: &Value, sizes: &[usize], next: usize) -> usize {
    match &v.kind {
        Some(Kind::StructValue(_) | Kind::ListValue(_)) => field_len(sizes[next]),
        Some(Kind::NullValue(n)) => 1 + encoded_len_varint(u64::from(n.unsigned_abs())),
        Some(Kind::NumberValue(_)) => 9,
        Some(Kind::StringValue(s)) => field_len(s.len()),
        Some(Kind::BoolValue(_)) => 2,
        None => 0,
    }
}

fn key(out: &mut Vec<u8>, field: u8, wire_type: u8) {
    out.put_u8(field << 3 | wire_type);
}

fn length(out: &mut Vec<u8>, len: usize) {
    prost::encoding::encode_varint(len as u64, out);
}

fn write_struct(s: &Struct, out: &mut Vec<u8>, sizes: &[usize], next: &mut usize) {
    *next += 1;
    for (name, value) in by_name(s) {
        let value_len = value_len(value, sizes, *next);
        key(out, 1, 2);
        length(out, entry_len(name, value, value_len));
        if !name.is_empty() {
            key(out, 1, 2);
            length(out, name.len());
            out.put_slice(name.as_bytes());
        }
        if value.kind.is_some() {
            key(out, 2, 2);
            length(out, value_len);
            write_value(value, out, sizes, next);
        }
    }
}

fn write_list(l: &ListValue, out: &mut Vec<u8>, sizes: &[usize], next: &mut usize) {
    *next += 1;
    for value in &l.values {
        key(out, 1, 2);
        length(out, value_len(value, sizes, *next));
        write_value(value, out, sizes, next);
    }
}

fn write_value(v: &Value, out: &mut Vec<u8>, sizes: &[usize], next: &mut usize) {
    match &v.kind {
        None => {}
        Some(Kind::NullValue(n)) => {
            key(out, 1, 0);
            prost::encoding::encode_varint(u64::from(n.unsigned_abs()), out);
        }
        Some(Kind::NumberValue(f)) => {
            key(out, 2, 1);
            out.put_f64_le(*f);
        }
        Some(Kind::StringValue(s)) => {
            key(out, 3, 2);
            length(out, s.len());
            out.put_slice(s.as_bytes());
        }
        Some(Kind::BoolValue(b)) => {
            key(out, 4, 0);
            out.put_u8(u8::from(*b));
        }
        Some(Kind::StructValue(s)) => {
            key(out, 5, 2);
            length(out, sizes[*next]);
            write_struct(s, out, sizes, next);
        }
        Some(Kind::ListValue(l)) => {
            key(out, 6, 2);
            length(out, sizes[*next]);
            write_list(l, out, sizes, next);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Kind::NullValue(0)),
            any::<f64>()
                .prop_filter("NaN is not equal to itself", |f| !f.is_nan())
                .prop_map(Kind::NumberValue),
            ".{0,200}".prop_map(Kind::StringValue),
            any::<bool>().prop_map(Kind::BoolValue),
        ];
        leaf.prop_recursive(6, 64, 8, |inner| {
            prop_oneof![
                prop::collection::hash_map(".{0,20}", inner.clone(), 0..8).prop_map(|m| {
                    Kind::StructValue(Struct {
                        fields: m
                            .into_iter()
                            .map(|(k, v)| (k, Value { kind: Some(v) }))
                            .collect(),
                    })
                }),
                prop::collection::vec(inner, 0..8).prop_map(|l| {
                    Kind::ListValue(ListValue {
                        values: l.into_iter().map(|v| Value { kind: Some(v) }).collect(),
                    })
                }),
            ]
        })
        .prop_map(|kind| Value { kind: Some(kind) })
    }

    proptest! {
        #[test]
        fn structs_decode_to_what_was_encoded(fields in prop::collection::hash_map(".{0,20}", value(), 0..10)) {
            let s = Struct { fields };
            let bytes = encode_struct(&s);
            prop_assert_eq!(bytes.len(), s.encoded_len());
            prop_assert_eq!(Struct::decode(bytes).unwrap(), s);
        }
    }

    #[test]
    fn a_response_decodes_to_the_same_response() {
        let mut body = Struct::default();
        body.fields.insert(
            "spec".into(),
            Value {
                kind: Some(Kind::StructValue(Struct {
                    fields: [(
                        "n".to_owned(),
                        Value {
                            kind: Some(Kind::NumberValue(1.5)),
                        },
                    )]
                    .into_iter()
                    .collect(),
                })),
            },
        );
        let resource = pb::Resource {
            resource: Some(body.clone()),
            connection_details: [("k".to_owned(), b"v".to_vec())].into_iter().collect(),
            ready: pb::Ready::True as i32,
        };
        let rsp = RunFunctionResponse {
            desired: Some(pb::State {
                composite: Some(pb::Resource {
                    resource: Some(Struct::default()),
                    ..pb::Resource::default()
                }),
                resources: [("a".to_owned(), resource)].into_iter().collect(),
            }),
            context: Some(body.clone()),
            output: Some(body),
            results: vec![pb::Result {
                message: "ok".into(),
                ..pb::Result::default()
            }],
            ..RunFunctionResponse::default()
        };
        let bytes = encode_response(rsp.clone(), EncodedBodies::new());
        assert_eq!(RunFunctionResponse::decode(bytes).unwrap(), rsp);
    }

    /// A response whose maps hold the same entries, filled in another order
    /// (each `HashMap` iterates in an order of its own).
    fn response_filled(reverse: bool) -> RunFunctionResponse {
        let mut names: Vec<String> = (0..24).map(|i| format!("r{i}")).collect();
        if reverse {
            names.reverse();
        }
        let text = |t: &str| Value {
            kind: Some(Kind::StringValue(t.to_owned())),
        };
        let body = Struct {
            fields: names.iter().map(|n| (n.clone(), text(n))).collect(),
        };
        let selector = |n: &String| ResourceSelector {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: None,
            r#match: Some(resource_selector::Match::MatchLabels(pb::MatchLabels {
                labels: names.iter().map(|l| (l.clone(), n.clone())).collect(),
            })),
        };
        RunFunctionResponse {
            desired: Some(pb::State {
                composite: Some(pb::Resource {
                    resource: Some(body.clone()),
                    ..pb::Resource::default()
                }),
                resources: names
                    .iter()
                    .map(|n| {
                        let r = pb::Resource {
                            resource: Some(body.clone()),
                            connection_details: names
                                .iter()
                                .map(|k| (k.clone(), n.as_bytes().to_vec()))
                                .collect(),
                            ..pb::Resource::default()
                        };
                        (n.clone(), r)
                    })
                    .collect(),
            }),
            context: Some(body),
            requirements: Some(Requirements {
                resources: names.iter().map(|n| (n.clone(), selector(n))).collect(),
                extra_resources: names.iter().map(|n| (n.clone(), selector(n))).collect(),
                schemas: names
                    .iter()
                    .map(|n| {
                        let s = SchemaSelector {
                            api_version: "v1".into(),
                            kind: n.clone(),
                        };
                        (n.clone(), s)
                    })
                    .collect(),
            }),
            ..RunFunctionResponse::default()
        }
    }

    #[test]
    fn the_same_response_is_the_same_bytes_whatever_order_its_maps_iterate_in() {
        let a = response_filled(false);
        let b = response_filled(true);
        assert_eq!(a, b);
        let bytes = encode_response(a.clone(), EncodedBodies::new());
        assert_eq!(bytes, encode_response(b, EncodedBodies::new()));
        assert_eq!(RunFunctionResponse::decode(bytes).unwrap(), a);
    }
}
