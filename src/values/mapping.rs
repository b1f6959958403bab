//! The three dict kinds seen as one: plain dicts, attribute-dicts and
//! schema dicts. Builtins that accept "dict-like" values read them here.

use starlark::collections::Hashed;
use starlark::values::dict::DictRef;
use starlark::values::{Heap, Value};

use crate::values::attr_dict::Entries;
use crate::values::schema::inner_dict;

/// True for a plain dict, an attribute-dict or a schema dict.
pub fn is_mapping(v: Value) -> bool {
    DictRef::from_value(v).is_some() || Entries::of(v).is_some() || inner_dict(v).is_some()
}

/// The entries of a dict-like value in its order, with hashed keys
/// (attribute-dict keys are allocated as strings on `heap`); `None` when
/// `v` is not dict-like.
pub fn entries<'v>(v: Value<'v>, heap: Heap<'v>) -> Option<Vec<(Hashed<Value<'v>>, Value<'v>)>> {
    let v = inner_dict(v).unwrap_or(v);
    if let Some(d) = DictRef::from_value(v) {
        return Some(d.iter_hashed().collect());
    }
    let e = Entries::of(v)?;
    Some(e.with(|m| {
        m.iter()
            .map(|(k, v)| (heap.alloc_str(k).get_hashed_value(), *v))
            .collect()
    }))
}

/// What looking a string key up in a value found.
#[derive(Debug, Clone, Copy)]
pub enum Lookup<'v> {
    /// The value is not dict-like.
    NotMapping,
    /// The key is absent.
    Missing,
    /// The value under the key (possibly `None`).
    Found(Value<'v>),
}

/// Looks the string `key` up in any dict-like value.
pub fn lookup<'v>(v: Value<'v>, key: &str) -> Lookup<'v> {
    let v = inner_dict(v).unwrap_or(v);
    if let Some(e) = Entries::of(v) {
        return e.get(key).map_or(Lookup::Missing, Lookup::Found);
    }
    if let Some(d) = DictRef::from_value(v) {
        return d.get_str(key).map_or(Lookup::Missing, Lookup::Found);
    }
    Lookup::NotMapping
}
