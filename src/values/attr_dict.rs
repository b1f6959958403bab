//! The attribute-dict: the dict flavour of `oxr`, `dxr`, `observed`,
//! `environment` and extra-resource bodies.
//!
//! It behaves like a dict (`type()` is `"dict"`, same repr, `len`, `in`,
//! iteration, `d[k]`), and adds dot access: `d.k` reads key `k` and yields
//! `None` when it is absent, so `oxr.spec.region` never fails on a missing
//! field. The eight dict method names always resolve to the methods.
//!
//! Keys are strings. Kubernetes objects only have string keys, and a string
//! key store lets `d.k = v` insert without a heap at hand.

use std::cell::RefCell;
use std::fmt;

use allocative::Allocative;
use starlark::coerce::coerce;
use starlark::collections::SmallMap;
use starlark::environment::Methods;
use starlark::values::dict::DictRef;
use starlark::values::{
    AllocFrozenValue, AllocValue, Demand, Freeze, FreezeResult, Freezer, FrozenHeap, FrozenValue,
    Heap, NoSerialize, ProvidesStaticType, StarlarkValue, Trace, Value, ValueLike, starlark_value,
};

use crate::values::dict_methods::{self, DictReceiver, METHOD_NAMES};

/// A mutable attribute-dict.
#[derive(Debug, Default, Trace, ProvidesStaticType, NoSerialize, Allocative)]
pub struct AttrDict<'v> {
    map: RefCell<SmallMap<String, Value<'v>>>,
}

/// A frozen attribute-dict: every mutation fails.
#[derive(Debug, Default, ProvidesStaticType, NoSerialize, Allocative)]
pub struct FrozenAttrDict {
    map: SmallMap<String, FrozenValue>,
    /// Why the body it stands for could not be converted (an observed or
    /// required resource whose body holds a number beyond 64 bits): then
    /// it is empty, and reading a key from it raises this, as the Go
    /// implementation's lazily converted bodies do.
    broken: Option<Box<str>>,
}

/// The conversion error of a body that could not be converted, if `value`
/// is one.
pub fn conversion_error(value: Value<'_>) -> Option<&str> {
    value.downcast_ref::<FrozenAttrDict>()?.broken.as_deref()
}

thread_local! {
    /// The attribute last read from a body that could not be converted,
    /// and why: the interpreter gives attribute reads no way to fail with
    /// a message of their own, so the run's error is reworded from the
    /// "no attribute" error it raises (see [`take_broken_attribute`]).
    static BROKEN_ATTRIBUTE: std::cell::RefCell<Option<(String, String)>> =
        const { std::cell::RefCell::new(None) };
}

/// Forgets the attribute last read from a body that could not be
/// converted: a run starts with none.
pub fn forget_broken_attribute() {
    BROKEN_ATTRIBUTE.with(|pending| pending.borrow_mut().take());
}

/// Why reading `attribute` failed, when it was read from a body that
/// could not be converted (and is the last such read on this thread).
pub fn take_broken_attribute(attribute: &str) -> Option<String> {
    BROKEN_ATTRIBUTE.with(|pending| {
        let mut pending = pending.borrow_mut();
        match pending.take() {
            Some((name, error)) if name == attribute => Some(error),
            other => {
                *pending = other;
                None
            }
        }
    })
}

impl<'v> AttrDict<'v> {
    /// A mutable attribute-dict holding `map`.
    pub fn new(map: SmallMap<String, Value<'v>>) -> Self {
        AttrDict {
            map: RefCell::new(map),
        }
    }

    fn entries(&self) -> Entries<'_, 'v> {
        Entries::Mutable(self)
    }
}

impl FrozenAttrDict {
    /// A frozen attribute-dict holding `map`.
    pub fn new(map: SmallMap<String, FrozenValue>) -> Self {
        FrozenAttrDict { map, broken: None }
    }

    /// An empty frozen attribute-dict standing for a body that could not
    /// be converted, for `error`.
    pub fn broken(error: String) -> Self {
        FrozenAttrDict {
            map: SmallMap::new(),
            broken: Some(error.into_boxed_str()),
        }
    }

    fn entries<'v>(&self) -> Entries<'_, 'v> {
        Entries::Frozen(coerce(&self.map))
    }
}

impl Freeze for AttrDict<'_> {
    type Frozen = FrozenAttrDict;

    fn freeze(self, freezer: &Freezer) -> FreezeResult<FrozenAttrDict> {
        let mut map = SmallMap::with_capacity(self.map.borrow().len());
        for (k, v) in self.map.into_inner() {
            map.insert(k, v.freeze(freezer)?);
        }
        Ok(FrozenAttrDict { map, broken: None })
    }
}

impl<'v> AllocValue<'v> for AttrDict<'v> {
    fn alloc_value(self, heap: Heap<'v>) -> Value<'v> {
        heap.alloc_complex(self)
    }
}

impl AllocFrozenValue for FrozenAttrDict {
    fn alloc_frozen_value(self, heap: &FrozenHeap) -> FrozenValue {
        heap.alloc_simple(self)
    }
}

/// Read access to the entries of either flavour, and write access to the
/// mutable one. Everything script-visible goes through these two.
pub enum Entries<'a, 'v> {
    /// A mutable dict's entries, borrowed.
    Mutable(&'a AttrDict<'v>),
    /// A frozen dict's entries.
    Frozen(&'a SmallMap<String, Value<'v>>),
}

impl<'v> Entries<'_, 'v> {
    /// The attribute-dict behind `value`, if it is one.
    pub fn of(value: Value<'v>) -> Option<Self> {
        if let Some(d) = value.downcast_ref::<AttrDict<'v>>() {
            return Some(Entries::Mutable(d));
        }
        value
            .downcast_ref::<FrozenAttrDict>()
            .map(|d| Entries::Frozen(coerce(&d.map)))
    }

    /// Runs `f` over the entries.
    pub fn with<R>(&self, f: impl FnOnce(&SmallMap<String, Value<'v>>) -> R) -> R {
        match self {
            Entries::Mutable(d) => f(&d.map.borrow()),
            Entries::Frozen(m) => f(m),
        }
    }

    /// Runs `f` over the entries for a mutation, or fails for a frozen dict.
    pub fn with_mut<R>(
        &self,
        f: impl FnOnce(&mut SmallMap<String, Value<'v>>) -> R,
    ) -> anyhow::Result<R> {
        match self {
            Entries::Mutable(d) => {
                let mut map = d
                    .map
                    .try_borrow_mut()
                    .map_err(|_| anyhow::anyhow!("cannot mutate a dict while iterating over it"))?;
                Ok(f(&mut map))
            }
            Entries::Frozen(_) => Err(anyhow::anyhow!("cannot mutate a frozen dict")),
        }
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<Value<'v>> {
        self.with(|m| m.get(key).copied())
    }
}

/// True for a value of either attribute-dict flavour.
pub fn is_attr_dict(value: Value) -> bool {
    Entries::of(value).is_some()
}

fn key_of(index: Value<'_>) -> starlark::Result<&str> {
    index.unpack_str().ok_or_else(|| {
        starlark::Error::new_other(anyhow::anyhow!(
            "dict key must be a string, got {}",
            index.get_type()
        ))
    })
}

fn repr_into(entries: &Entries, collector: &mut String) {
    entries.with(|m| {
        collector.push('{');
        for (i, (k, v)) in m.iter().enumerate() {
            if i > 0 {
                collector.push_str(", ");
            }
            // Keys are strings; render them exactly as a string repr would.
            collector.push_str(&starlark_string_repr(k));
            collector.push_str(": ");
            v.collect_repr(collector);
        }
        collector.push('}');
    });
}

fn starlark_string_repr(s: &str) -> String {
    starlark::values::string::StarlarkStr::repr(s)
}

fn display(entries: &Entries, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let mut s = String::new();
    repr_into(entries, &mut s);
    f.write_str(&s)
}

impl fmt::Display for AttrDict<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        display(&Entries::Mutable(self), f)
    }
}

impl fmt::Display for FrozenAttrDict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        display(&Entries::Frozen(coerce(&self.map)), f)
    }
}

/// Content equality with another attribute-dict or a plain dict.
fn equals<'v>(entries: &Entries<'_, 'v>, other: Value<'v>) -> starlark::Result<bool> {
    if let Some(other) = Entries::of(other) {
        return entries.with(|a| {
            other.with(|b| {
                if a.len() != b.len() {
                    return Ok(false);
                }
                for (k, v) in a {
                    match b.get(k) {
                        Some(w) if v.equals(*w)? => {}
                        _ => return Ok(false),
                    }
                }
                Ok(true)
            })
        });
    }
    if let Some(other) = DictRef::from_value(other) {
        return entries.with(|a| {
            if a.len() != other.len() {
                return Ok(false);
            }
            for (k, v) in a {
                match other.get_str(k) {
                    Some(w) if v.equals(w)? => {}
                    _ => return Ok(false),
                }
            }
            Ok(true)
        });
    }
    Ok(false)
}

// The two flavours share every behaviour; only how their entries are reached
// differs. (A `tt` list, because `#[starlark_value]` needs a plain path.)
macro_rules! attr_dict_value_impl {
    ($canonical:ty; $($ty:tt)+) => {
        #[starlark_value(type = "dict")]
        impl<'v> StarlarkValue<'v> for $($ty)+ {
            type Canonical = $canonical;

            fn get_methods() -> Option<&'static Methods> {
                dict_methods::methods()
            }

            fn provide(&'v self, demand: &mut Demand<'_, 'v>) {
                demand.provide_value::<&dyn DictReceiver<'v>>(self);
            }

            fn collect_repr(&self, collector: &mut String) {
                repr_into(&self.entries(), collector);
            }

            fn to_bool(&self) -> bool {
                self.entries().with(|m| !m.is_empty())
            }

            fn equals(&self, other: Value<'v>) -> starlark::Result<bool> {
                equals(&self.entries(), other)
            }

            fn length(&self) -> starlark::Result<i32> {
                Ok(i32::try_from(self.entries().with(SmallMap::len)).unwrap_or(i32::MAX))
            }

            fn is_in(&self, other: Value<'v>) -> starlark::Result<bool> {
                if let Some(error) = self.broken_body() {
                    return Err(starlark::Error::new_other(anyhow::anyhow!("{error}")));
                }
                Ok(match other.unpack_str() {
                    Some(k) => self.entries().get(k).is_some(),
                    None => false,
                })
            }

            fn at(&self, index: Value<'v>, _heap: Heap<'v>) -> starlark::Result<Value<'v>> {
                if let Some(error) = self.broken_body() {
                    return Err(starlark::Error::new_other(anyhow::anyhow!("{error}")));
                }
                let key = key_of(index)?;
                self.entries().get(key).ok_or_else(|| {
                    starlark::Error::new_other(anyhow::anyhow!("key {} not in dict", index.to_repr()))
                })
            }

            fn set_at(&self, index: Value<'v>, new_value: Value<'v>) -> starlark::Result<()> {
                let key = key_of(index)?.to_owned();
                self.entries()
                    .with_mut(|m| {
                        m.insert(key, new_value);
                    })
                    .map_err(starlark::Error::new_other)
            }

            fn get_attr(&self, attribute: &str, _heap: Heap<'v>) -> Option<Value<'v>> {
                if let Some(error) = self.broken_body() {
                    BROKEN_ATTRIBUTE.with(|pending| {
                        *pending.borrow_mut() = Some((attribute.to_owned(), error.to_owned()));
                    });
                    return None;
                }
                Some(self.entries().get(attribute).unwrap_or_else(Value::new_none))
            }

            fn has_attr(&self, _attribute: &str, _heap: Heap<'v>) -> bool {
                true
            }

            fn dir_attr(&self) -> Vec<String> {
                let mut names: Vec<String> = self.entries().with(|m| m.keys().cloned().collect());
                names.extend(METHOD_NAMES.iter().map(|s| (*s).to_owned()));
                names.sort();
                names.dedup();
                names
            }

            fn set_attr(&self, attribute: &str, new_value: Value<'v>) -> starlark::Result<()> {
                self.entries()
                    .with_mut(|m| {
                        m.insert(attribute.to_owned(), new_value);
                    })
                    .map_err(starlark::Error::new_other)
            }

            fn iterate_collect(&self, heap: Heap<'v>) -> starlark::Result<Vec<Value<'v>>> {
                Ok(self.entries().with(|m| m.keys().map(|k| heap.alloc_str(k).to_value()).collect()))
            }
        }

        impl<'v> DictReceiver<'v> for $($ty)+ {
            fn readable(&self) -> anyhow::Result<()> {
                match self.broken_body() {
                    Some(error) => Err(anyhow::anyhow!("{error}")),
                    None => Ok(()),
                }
            }

            fn key_list(&self, heap: Heap<'v>) -> Vec<Value<'v>> {
                self.entries().with(|m| m.keys().map(|k| heap.alloc_str(k).to_value()).collect())
            }

            fn value_list(&self) -> Vec<Value<'v>> {
                self.entries().with(|m| m.values().copied().collect())
            }

            fn lookup(&self, key: Value<'v>) -> anyhow::Result<Option<Value<'v>>> {
                Ok(key.unpack_str().and_then(|k| self.entries().get(k)))
            }

            fn remove(&self, key: Value<'v>) -> anyhow::Result<Option<Value<'v>>> {
                match key.unpack_str() {
                    Some(k) => self.entries().with_mut(|m| m.shift_remove(k)),
                    None => Ok(None),
                }
            }

            fn store(&self, key: Value<'v>, value: Value<'v>) -> anyhow::Result<()> {
                let key = key_of(key).map_err(starlark::Error::into_anyhow)?.to_owned();
                self.entries().with_mut(|m| {
                    m.insert(key, value);
                })
            }

            fn update_from(&self, other: Value<'v>) -> anyhow::Result<()> {
                let pairs = string_keyed_pairs(other)?;
                self.entries().with_mut(|m| m.extend(pairs))
            }

            fn clear(&self) -> anyhow::Result<()> {
                self.entries().with_mut(SmallMap::clear)
            }
        }
    };
}

/// The entries of `other` (an attribute-dict, or a dict with string keys)
/// for `update`.
fn string_keyed_pairs(other: Value<'_>) -> anyhow::Result<Vec<(String, Value<'_>)>> {
    if let Some(o) = Entries::of(other) {
        return Ok(o.with(|m| m.iter().map(|(k, v)| (k.clone(), *v)).collect()));
    }
    let Some(d) = DictRef::from_value(other) else {
        return Err(anyhow::anyhow!(
            "update: unsupported argument type {}",
            other.get_type()
        ));
    };
    d.iter()
        .map(|(k, v)| {
            Ok((
                key_of(k).map_err(starlark::Error::into_anyhow)?.to_owned(),
                v,
            ))
        })
        .collect()
}

impl AttrDict<'_> {
    /// A mutable dict is always a converted body.
    #[allow(clippy::unused_self)]
    fn broken_body(&self) -> Option<&str> {
        None
    }
}

impl FrozenAttrDict {
    fn broken_body(&self) -> Option<&str> {
        self.broken.as_deref()
    }
}

attr_dict_value_impl!(AttrDict<'v>; AttrDict<'v>);
attr_dict_value_impl!(AttrDict<'v>; FrozenAttrDict);
