//! protobuf `Struct` values to Starlark values and back, with the
//! reference's number rules and errors. No other module converts.

use std::fmt;

use pbjson_types::value::Kind;
use pbjson_types::{ListValue, Struct, Value as PbValue};
use starlark::collections::SmallMap;
use starlark::values::dict::{AllocDict, DictRef};
use starlark::values::list::{AllocList, ListRef};
use starlark::values::{FrozenHeap, FrozenValue, Heap, Value, ValueLike};

mod body;
mod encoded;

pub use body::{Edits, dict_get, encode_resource_body, is_dict_like};

use crate::go::float::format_g;
use crate::values::attr_dict::{AttrDict, Entries, FrozenAttrDict};

/// 2^53: the largest magnitude up to which every integer is exact in a
/// float64, and so in a protobuf number.
const MAX_SAFE_INT: i64 = 1 << 53;

/// How deep values may nest before conversion gives up. Kubernetes objects
/// are far shallower; the bound turns a self-containing dict into an error
/// instead of a stack overflow.
const MAX_DEPTH: usize = 100;

/// Which dict flavour a protobuf struct becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// Attribute-dicts with dot access (`oxr`, `observed`, ...).
    Attr,
    /// Plain dicts (`context`).
    Plain,
}

/// A conversion failure, with the path to the offending value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvertError {
    path: Vec<String>,
    message: String,
}

impl ConvertError {
    fn new(message: impl Into<String>) -> Self {
        ConvertError {
            path: Vec::new(),
            message: message.into(),
        }
    }

    /// Whether the bytes themselves were malformed (not a valid encoded
    /// struct), rather than a value they hold having no Starlark form.
    pub fn is_malformed(&self) -> bool {
        self.message.starts_with(MALFORMED)
    }

    fn at(mut self, segment: String) -> Self {
        self.path.push(segment);
        self
    }
}

impl fmt::Display for ConvertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Segments are pushed innermost first.
        for segment in self.path.iter().rev() {
            write!(f, "{segment}: ")?;
        }
        f.write_str(&self.message)
    }
}

/// How the message of an error about malformed bytes starts.
pub(crate) const MALFORMED: &str = "malformed protobuf";

fn field(key: &str) -> String {
    format!("field {key:?}")
}

fn index(i: usize) -> String {
    format!("list[{i}]")
}

/// Where converted values are allocated: the mutable heap of the request's
/// module, or its frozen heap for the read-only globals.
trait Target {
    type V: Copy;
    fn none(&self) -> Self::V;
    fn bool(&self, b: bool) -> Self::V;
    fn int(&self, i: i64) -> Self::V;
    fn float(&self, f: f64) -> Self::V;
    fn str(&self, s: &str) -> Self::V;
    fn list(&self, items: Vec<Self::V>) -> Self::V;
    /// A dict of `entries`, whose keys are distinct.
    fn dict(&self, entries: Vec<(String, Self::V)>, flavor: Flavor) -> Self::V;
}

/// The map of an attribute-dict: `entries` have distinct keys (a struct's
/// fields), so none is looked up before it goes in.
fn distinct<V>(entries: Vec<(String, V)>) -> SmallMap<String, V> {
    let mut map = SmallMap::with_capacity(entries.len());
    for (key, value) in entries {
        map.insert_unique_unchecked(key, value);
    }
    map
}

struct Mutable<'v>(Heap<'v>);

impl<'v> Target for Mutable<'v> {
    type V = Value<'v>;
    fn none(&self) -> Value<'v> {
        Value::new_none()
    }
    fn bool(&self, b: bool) -> Value<'v> {
        Value::new_bool(b)
    }
    fn int(&self, i: i64) -> Value<'v> {
        self.0.alloc(i)
    }
    fn float(&self, f: f64) -> Value<'v> {
        self.0.alloc(f)
    }
    fn str(&self, s: &str) -> Value<'v> {
        self.0.alloc(s)
    }
    fn list(&self, items: Vec<Value<'v>>) -> Value<'v> {
        self.0.alloc(AllocList(items))
    }
    fn dict(&self, entries: Vec<(String, Value<'v>)>, flavor: Flavor) -> Value<'v> {
        match flavor {
            Flavor::Attr => self.0.alloc(AttrDict::new(distinct(entries))),
            Flavor::Plain => self.0.alloc(AllocDict(entries)),
        }
    }
}

struct Frozen<'h>(&'h FrozenHeap);

impl Target for Frozen<'_> {
    type V = FrozenValue;
    fn none(&self) -> FrozenValue {
        FrozenValue::new_none()
    }
    fn bool(&self, b: bool) -> FrozenValue {
        FrozenValue::new_bool(b)
    }
    fn int(&self, i: i64) -> FrozenValue {
        self.0.alloc(i)
    }
    fn float(&self, f: f64) -> FrozenValue {
        self.0.alloc(f)
    }
    fn str(&self, s: &str) -> FrozenValue {
        self.0.alloc(s)
    }
    fn list(&self, items: Vec<FrozenValue>) -> FrozenValue {
        self.0.alloc(AllocList(items))
    }
    fn dict(&self, entries: Vec<(String, FrozenValue)>, flavor: Flavor) -> FrozenValue {
        match flavor {
            Flavor::Attr => self.0.alloc(FrozenAttrDict::new(distinct(entries))),
            Flavor::Plain => self.0.alloc(AllocDict(entries)),
        }
    }
}

/// Converts a struct into a mutable Starlark dict of the given flavour.
pub fn struct_to_value<'v>(
    heap: Heap<'v>,
    s: &Struct,
    flavor: Flavor,
) -> Result<Value<'v>, ConvertError> {
    struct_to(&Mutable(heap), s, flavor)
}

/// Converts a struct into a frozen Starlark dict of the given flavour.
pub fn struct_to_frozen(
    heap: &FrozenHeap,
    s: &Struct,
    flavor: Flavor,
) -> Result<FrozenValue, ConvertError> {
    struct_to(&Frozen(heap), s, flavor)
}

/// Converts an encoded struct (`google.protobuf.Struct` bytes) into a
/// frozen Starlark dict of the given flavour, as decoding it and calling
/// [`struct_to_frozen`] would.
pub fn encoded_struct_to_frozen(
    heap: &FrozenHeap,
    bytes: &[u8],
    flavor: Flavor,
) -> Result<FrozenValue, ConvertError> {
    encoded::struct_to(&Frozen(heap), &[bytes], flavor)
}

/// The strings at `paths` (each the keys of nested structs) in an
/// encoded struct, one per path, as [`string_at`] finds each in the
/// decoded struct; `None` also where the bytes on the way are malformed.
pub fn encoded_strings_at<'a, const N: usize>(
    bytes: &'a [u8],
    paths: [&[&str]; N],
) -> [Option<&'a str>; N] {
    let mut out = [None; N];
    encoded::strings_at(&[bytes], &paths, &mut out);
    out
}

/// The value at `path` (keys of nested structs) in `s`; `None` when a key
/// is missing (or its value unset), a step is not a struct, or the path is
/// empty.
pub fn kind_at<'a>(s: &'a Struct, path: &[&str]) -> Option<&'a Kind> {
    let (last, steps) = path.split_last()?;
    let mut s = s;
    for step in steps {
        match s.fields.get(*step)?.kind.as_ref()? {
            Kind::StructValue(inner) => s = inner,
            _ => return None,
        }
    }
    s.fields.get(*last)?.kind.as_ref()
}

/// The string at `path` (keys of nested structs) in `s`; `None` when a key
/// is missing, a step is not a struct or the last is not a string.
pub fn string_at<'a>(s: &'a Struct, path: &[&str]) -> Option<&'a str> {
    match kind_at(s, path)? {
        Kind::StringValue(v) => Some(v),
        _ => None,
    }
}

/// A frozen list of values, for `extra_resources` entries.
pub fn frozen_list(heap: &FrozenHeap, items: Vec<FrozenValue>) -> FrozenValue {
    Frozen(heap).list(items)
}

/// A frozen plain dict, for `extra_resources` itself (a repeated key
/// keeps its last value).
pub fn frozen_plain_dict(heap: &FrozenHeap, entries: Vec<(String, FrozenValue)>) -> FrozenValue {
    Frozen(heap).dict(entries, Flavor::Plain)
}

fn struct_to<T: Target>(t: &T, s: &Struct, flavor: Flavor) -> Result<T::V, ConvertError> {
    // Protobuf maps have no order; sorted keys make every run the same.
    let mut fields: Vec<(&String, &PbValue)> = s.fields.iter().collect();
    fields.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut entries = Vec::with_capacity(fields.len());
    for (key, value) in fields {
        let v = pb_to(t, value, flavor).map_err(|e| e.at(field(key)))?;
        entries.push((key.clone(), v));
    }
    Ok(t.dict(entries, flavor))
}

fn pb_to<T: Target>(t: &T, v: &PbValue, flavor: Flavor) -> Result<T::V, ConvertError> {
    Ok(match &v.kind {
        None | Some(Kind::NullValue(_)) => t.none(),
        Some(Kind::BoolValue(b)) => t.bool(*b),
        Some(Kind::StringValue(s)) => t.str(s),
        Some(Kind::NumberValue(n)) => number_to(t, *n)?,
        Some(Kind::StructValue(s)) => struct_to(t, s, flavor)?,
        Some(Kind::ListValue(l)) => {
            let mut items = Vec::with_capacity(l.values.len());
            for (i, item) in l.values.iter().enumerate() {
                items.push(pb_to(t, item, flavor).map_err(|e| e.at(index(i)))?);
            }
            t.list(items)
        }
    })
}

#[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
fn number_to<T: Target>(t: &T, n: f64) -> Result<T::V, ConvertError> {
    const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
    if !n.is_finite() || n.fract() != 0.0 {
        return Ok(t.float(n));
    }
    if n.abs() >= TWO_POW_63 {
        return Err(ConvertError::new(format!(
            "value {} exceeds int64 range",
            format_g(n)
        )));
    }
    if n.abs() > MAX_SAFE_INT as f64 {
        return Ok(t.float(n));
    }
    // Whole and within ±2^53: exact as an i64 (and -0.0 becomes 0).
    Ok(t.int(n as i64))
}

/// Options for converting a Starlark value to protobuf.
#[derive(Clone, Copy, Debug)]
pub struct ToPb {
    /// Drop dict entries whose value is `None` (resource bodies only).
    pub prune_none: bool,
    /// The deepest nesting allowed, and the error when it is exceeded.
    pub max_depth: usize,
}

impl ToPb {
    /// `dxr`, `context`: `None` becomes null.
    pub const PLAIN: ToPb = ToPb {
        prune_none: false,
        max_depth: MAX_DEPTH,
    };
    /// Resource bodies: `None` entries are dropped, as `dict.compact` does.
    pub const RESOURCE_BODY: ToPb = ToPb {
        prune_none: true,
        max_depth: 32,
    };
}

/// Converts a dict-like Starlark value into a protobuf struct.
pub fn value_to_struct(v: Value, opts: ToPb) -> Result<Struct, ConvertError> {
    match to_pb(v, opts, 0)?.kind {
        Some(Kind::StructValue(s)) => Ok(s),
        _ => Err(ConvertError::new(format!(
            "expected a dict, got {}",
            v.get_type()
        ))),
    }
}

/// Converts a Starlark value into a protobuf value.
pub fn value_to_pb(v: Value, opts: ToPb) -> Result<PbValue, ConvertError> {
    to_pb(v, opts, 0)
}

/// The entries of any dict-like value (plain dict, attribute-dict, schema
/// dict, mutable struct), with string keys checked. `None` when `v` is not dict-like.
pub fn dict_entries(v: Value<'_>) -> Option<Result<Vec<(String, Value<'_>)>, ConvertError>> {
    let v = crate::values::mutable_struct::composed_dict(v);
    if let Some(entries) = Entries::of(v) {
        return Some(Ok(
            entries.with(|m| m.iter().map(|(k, v)| (k.clone(), *v)).collect())
        ));
    }
    let dict = DictRef::from_value(v)?;
    Some(
        dict.iter()
            .map(|(k, v)| match k.unpack_str() {
                Some(k) => Ok((k.to_owned(), v)),
                None => Err(ConvertError::new(format!(
                    "dict key {} ({}) is not a string",
                    k.to_repr(),
                    k.get_type()
                ))),
            })
            .collect(),
    )
}

fn to_pb(v: Value, opts: ToPb, depth: usize) -> Result<PbValue, ConvertError> {
    let kind = if v.is_none() {
        Kind::NullValue(0)
    } else if let Some(b) = v.unpack_bool() {
        Kind::BoolValue(b)
    } else if let Some(s) = v.unpack_str() {
        Kind::StringValue(s.to_owned())
    } else if v.get_type() == "int" {
        Kind::NumberValue(int_to_number(v)?)
    } else if let Some(f) = v.downcast_ref::<starlark::values::float::StarlarkFloat>() {
        Kind::NumberValue(f.0)
    } else if let Some(entries) = dict_entries(v) {
        check_depth(depth, opts)?;
        let entries = entries?;
        let mut fields = std::collections::HashMap::with_capacity(entries.len());
        for (key, value) in entries {
            if opts.prune_none && value.is_none() {
                continue;
            }
            let converted = to_pb(value, opts, depth + 1).map_err(|e| e.at(field(&key)))?;
            fields.insert(key, converted);
        }
        Kind::StructValue(Struct { fields })
    } else if let Some(list) = ListRef::from_value(v) {
        check_depth(depth, opts)?;
        let mut values = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            values.push(to_pb(item, opts, depth + 1).map_err(|e| e.at(index(i)))?);
        }
        Kind::ListValue(ListValue { values })
    } else {
        return Err(ConvertError::new(format!(
            "unsupported starlark type for protobuf conversion: {}",
            v.get_type()
        )));
    };
    Ok(PbValue { kind: Some(kind) })
}

fn check_depth(depth: usize, opts: ToPb) -> Result<(), ConvertError> {
    if depth >= opts.max_depth {
        let what = if opts.prune_none {
            "compact: Resource"
        } else {
            "converting value"
        };
        return Err(ConvertError::new(format!(
            "{what}: recursion depth exceeds maximum ({})",
            opts.max_depth
        )));
    }
    Ok(())
}

#[allow(clippy::cast_precision_loss)]
fn int_to_number(v: Value) -> Result<f64, ConvertError> {
    match v.unpack_i32() {
        Some(i) => Ok(f64::from(i)),
        None => match v.to_str().parse::<i64>() {
            Ok(i) if (-MAX_SAFE_INT..=MAX_SAFE_INT).contains(&i) => Ok(i as f64),
            _ => Err(ConvertError::new(format!(
                "integer too large for protobuf number: {v}"
            ))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use starlark::environment::Module;

    fn pb_struct(v: serde_json::Value) -> Struct {
        let serde_json::Value::Object(m) = v else {
            panic!("test input must be an object")
        };
        function_sdk_rust::resource::json_to_struct(&m)
    }

    #[test]
    fn whole_numbers_up_to_two_pow_53_become_ints() {
        Module::with_temp_heap(|module| {
            let s = pb_struct(
                json!({"a": 65535, "b": 3.5, "c": 18_014_398_509_481_984.0_f64, "d": -0.0}),
            );
            let v = struct_to_value(module.heap(), &s, Flavor::Attr).unwrap();
            let d = Entries::of(v).unwrap();
            assert_eq!(d.get("a").unwrap().get_type(), "int");
            assert_eq!(d.get("b").unwrap().get_type(), "float");
            assert_eq!(d.get("c").unwrap().get_type(), "float");
            assert_eq!(d.get("d").unwrap().to_str(), "0");
        });
    }

    #[test]
    fn numbers_beyond_int64_are_errors_with_their_path() {
        Module::with_temp_heap(|module| {
            let s = pb_struct(json!({"spec": {"x": [0, 1, 1e19]}}));
            let err = struct_to_value(module.heap(), &s, Flavor::Attr).unwrap_err();
            assert_eq!(
                err.to_string(),
                r#"field "spec": field "x": list[2]: value 1e+19 exceeds int64 range"#
            );
        });
    }

    #[test]
    fn resource_bodies_drop_none_entries_but_keep_none_list_items() {
        Module::with_temp_heap(|module| {
            let heap = module.heap();
            let inner = heap.alloc(AllocDict([("a", Value::new_none()), ("b", heap.alloc(2))]));
            let items = heap.alloc(AllocList([Value::new_none(), inner]));
            let body = heap.alloc(AllocDict([("items", items), ("x", Value::new_none())]));
            let s = value_to_struct(body, ToPb::RESOURCE_BODY).unwrap();
            let json = function_sdk_rust::resource::struct_to_json(&s);
            assert_eq!(json, json!({"items": [null, {"b": 2}]}));
        });
    }

    #[test]
    fn large_ints_and_tuples_are_refused() {
        Module::with_temp_heap(|module| {
            let heap = module.heap();
            let big = heap.alloc(AllocDict([("n", heap.alloc((1_i64 << 53) + 1))]));
            let err = value_to_struct(big, ToPb::PLAIN).unwrap_err();
            assert!(
                err.to_string()
                    .contains("integer too large for protobuf number: 9007199254740993")
            );
            let ok = heap.alloc(AllocDict([("n", heap.alloc(1_i64 << 53))]));
            let s = value_to_struct(ok, ToPb::PLAIN).unwrap();
            assert_eq!(
                function_sdk_rust::resource::struct_to_json(&s),
                json!({"n": 9_007_199_254_740_992_i64})
            );
            let tuple = heap.alloc(AllocDict([("t", heap.alloc((1, 2)))]));
            let err = value_to_struct(tuple, ToPb::PLAIN).unwrap_err();
            assert_eq!(
                err.to_string(),
                r#"field "t": unsupported starlark type for protobuf conversion: tuple"#
            );
        });
    }

    #[test]
    fn non_string_keys_are_named() {
        Module::with_temp_heap(|module| {
            let heap = module.heap();
            let d = heap.alloc(AllocDict([(heap.alloc(42), heap.alloc("v"))]));
            let err = value_to_struct(d, ToPb::PLAIN).unwrap_err();
            assert_eq!(err.to_string(), "dict key 42 (int) is not a string");
        });
    }
}
