//! The eight dict methods of the attribute-dict and the schema dict. One
//! set serves both: each method reaches its receiver's entries through
//! [`DictReceiver`], which both types hand out from
//! `StarlarkValue::provide`, so this file knows neither type.

use anyhow::anyhow;
use starlark::any::ProvidesStaticType;
use starlark::environment::{Methods, MethodsBuilder, MethodsStatic};
use starlark::starlark_module;
use starlark::values::none::NoneType;
use starlark::values::{Heap, Value};

/// The method names that dot access on either type always resolves to the
/// method, whatever keys the dict holds.
pub const METHOD_NAMES: [&str; 8] = [
    "clear",
    "get",
    "items",
    "keys",
    "pop",
    "setdefault",
    "update",
    "values",
];

/// What the dict methods need of a receiver's entries.
pub trait DictReceiver<'v> {
    /// Fails when the entries cannot be read (a body that could not be
    /// converted); the reading methods call it first.
    fn readable(&self) -> anyhow::Result<()> {
        Ok(())
    }
    /// The keys, in order (allocated on `heap` where the dict keeps them
    /// as Rust strings).
    fn key_list(&self, heap: Heap<'v>) -> Vec<Value<'v>>;
    /// The values, in order.
    fn value_list(&self) -> Vec<Value<'v>>;
    /// The value under `key`; `None` when absent, or when `key` is of a
    /// kind the dict never holds.
    fn lookup(&self, key: Value<'v>) -> anyhow::Result<Option<Value<'v>>>;
    /// Removes `key`, returning its value if it was there.
    fn remove(&self, key: Value<'v>) -> anyhow::Result<Option<Value<'v>>>;
    /// Stores `value` under `key` as `d[key] = value` would.
    fn store(&self, key: Value<'v>, value: Value<'v>) -> anyhow::Result<()>;
    /// Copies every entry of `other` in, as `d.update(other)`.
    fn update_from(&self, other: Value<'v>) -> anyhow::Result<()>;
    /// Removes every entry.
    fn clear(&self) -> anyhow::Result<()>;
}

// SAFETY: the static type is the same trait object with every lifetime
// `'static`, as `ProvidesStaticType` requires.
unsafe impl<'v> ProvidesStaticType<'v> for &'v dyn DictReceiver<'v> {
    type StaticType = &'static dyn DictReceiver<'static>;
}

/// The dict methods, for `StarlarkValue::get_methods`.
pub fn methods() -> Option<&'static Methods> {
    static METHODS: MethodsStatic = MethodsStatic::new("dict", dict_methods);
    Some(METHODS.methods())
}

fn receiver(this: Value<'_>) -> anyhow::Result<&dyn DictReceiver<'_>> {
    this.request_value::<&dyn DictReceiver>()
        .ok_or_else(|| anyhow!("expected a dict receiver, got {}", this.get_type()))
}

#[starlark_module]
fn dict_methods(builder: &mut MethodsBuilder) {
    /// The keys, as a new list.
    fn keys<'v>(this: Value<'v>, heap: Heap<'v>) -> anyhow::Result<Vec<Value<'v>>> {
        let d = receiver(this)?;
        d.readable()?;
        Ok(d.key_list(heap))
    }

    /// The values, as a new list.
    fn values<'v>(this: Value<'v>) -> anyhow::Result<Vec<Value<'v>>> {
        let d = receiver(this)?;
        d.readable()?;
        Ok(d.value_list())
    }

    /// The entries, as a new list of `(key, value)` tuples.
    fn items<'v>(this: Value<'v>, heap: Heap<'v>) -> anyhow::Result<Vec<Value<'v>>> {
        let d = receiver(this)?;
        d.readable()?;
        Ok(d.key_list(heap)
            .into_iter()
            .zip(d.value_list())
            .map(|pair| heap.alloc(pair))
            .collect())
    }

    /// The value under `key`, or `default`.
    fn get<'v>(
        this: Value<'v>,
        #[starlark(require = pos)] key: Value<'v>,
        #[starlark(require = pos)] default: Option<Value<'v>>,
    ) -> anyhow::Result<Value<'v>> {
        let d = receiver(this)?;
        d.readable()?;
        Ok(d.lookup(key)?
            .unwrap_or_else(|| default.unwrap_or_else(Value::new_none)))
    }

    /// Removes `key` and returns its value, or `default` when it is absent.
    fn pop<'v>(
        this: Value<'v>,
        #[starlark(require = pos)] key: Value<'v>,
        #[starlark(require = pos)] default: Option<Value<'v>>,
    ) -> anyhow::Result<Value<'v>> {
        match (receiver(this)?.remove(key)?, default) {
            (Some(v), _) | (None, Some(v)) => Ok(v),
            (None, None) => Err(anyhow!("pop: key {} not found", key.to_repr())),
        }
    }

    /// Copies every entry of `other` in.
    fn update<'v>(
        this: Value<'v>,
        #[starlark(require = pos)] other: Value<'v>,
    ) -> anyhow::Result<NoneType> {
        receiver(this)?.update_from(other)?;
        Ok(NoneType)
    }

    /// Removes every entry.
    fn clear<'v>(this: Value<'v>) -> anyhow::Result<NoneType> {
        receiver(this)?.clear()?;
        Ok(NoneType)
    }

    /// The value under `key`; stores `default` first when it is absent.
    fn setdefault<'v>(
        this: Value<'v>,
        #[starlark(require = pos)] key: Value<'v>,
        #[starlark(require = pos)] default: Option<Value<'v>>,
    ) -> anyhow::Result<Value<'v>> {
        let d = receiver(this)?;
        if let Some(v) = d.lookup(key)? {
            return Ok(v);
        }
        let v = default.unwrap_or_else(Value::new_none);
        d.store(key, v)?;
        Ok(v)
    }
}
