//! The SchemaDict: what a schema constructor returns. A dict (`type()` is
//! `"dict"`) bound to its schema, printed as `NAME({...})`, with the
//! attribute-dict's dot access and methods, and every insertion validated
//! against the schema.
//!
//! The entries live in an ordinary dict value it owns, so keys keep their
//! order and may be any hashable value (only string keys are validated).

use std::fmt;

use allocative::Allocative;
use anyhow::anyhow;
use starlark::coerce::Coerce;
use starlark::collections::StarlarkHasher;
use starlark::environment::{Methods, MethodsBuilder, MethodsStatic};
use starlark::starlark_complex_value;
use starlark::starlark_module;
use starlark::values::dict::{DictMut, DictRef};
use starlark::values::none::NoneType;
use starlark::values::{
    Freeze, FreezeResult, Freezer, Heap, NoSerialize, ProvidesStaticType, StarlarkValue, Trace,
    Value, ValueLike, starlark_value,
};

use crate::values::attr_dict::{Entries, METHOD_NAMES};
use crate::values::schema::{Schema, check_value};

/// A schema dict. `V` is `Value` or `FrozenValue`.
#[derive(Debug, Clone, Trace, Coerce, ProvidesStaticType, NoSerialize, Allocative)]
#[repr(C)]
pub struct SchemaDictGen<V> {
    /// The schema constructor it belongs to.
    schema: V,
    /// A plain dict holding the entries.
    dict: V,
}

starlark_complex_value!(pub SchemaDict);

impl<'v> SchemaDict<'v> {
    /// A schema dict of `schema` (a constructor) over the plain dict `dict`.
    pub fn new(schema: Value<'v>, dict: Value<'v>) -> Self {
        SchemaDictGen { schema, dict }
    }
}

/// The plain dict holding a schema dict's entries, if `v` is one.
pub fn inner_dict(v: Value<'_>) -> Option<Value<'_>> {
    SchemaDict::from_value(v).map(|s| s.dict)
}

/// True for a schema dict.
pub fn is_schema_dict(v: Value) -> bool {
    SchemaDict::from_value(v).is_some()
}

impl<'v, V: ValueLike<'v>> SchemaDictGen<V> {
    /// The schema's name.
    pub fn schema_name(&self) -> String {
        self.schema_ref()
            .map_or_else(String::new, |s| s.name().to_owned())
    }

    fn schema_ref(&self) -> Option<&'v Schema<'v>> {
        Schema::from_value(self.schema.to_value())
    }

    fn entries(&self) -> DictRef<'v> {
        DictRef::from_value(self.dict.to_value()).expect("a schema dict holds a dict")
    }

    fn entries_mut(&self) -> anyhow::Result<DictMut<'v>> {
        let dict = self.dict.to_value();
        if dict.unpack_frozen().is_some() {
            return Err(anyhow!("cannot mutate a frozen dict"));
        }
        DictMut::from_value(dict)
    }

    /// Checks that `value` may be stored under `key` (string keys only).
    fn validate(&self, key: Value<'v>, value: Value<'v>) -> anyhow::Result<()> {
        let (Some(name), Some(schema)) = (key.unpack_str(), self.schema_ref()) else {
            return Ok(());
        };
        let Some((_, descriptor)) = schema.field(name) else {
            return Err(anyhow!(
                "{}: {}",
                schema.name(),
                schema.unknown_field(name, name)
            ));
        };
        if value.is_none() {
            return Ok(());
        }
        let mut errors = Vec::new();
        check_value(descriptor, name, value, None, &mut errors);
        match errors.first() {
            Some(first) => Err(anyhow!("{}.{first}", schema.name())),
            None => Ok(()),
        }
    }

    /// Validates, then stores `value` under `key`.
    pub fn insert(&self, key: Value<'v>, value: Value<'v>) -> anyhow::Result<()> {
        let key = key.get_hashed().map_err(starlark::Error::into_anyhow)?;
        self.validate(*key.key(), value)?;
        self.entries_mut()?.aref.insert_hashed(key, value);
        Ok(())
    }

    fn render(&self, collector: &mut String) {
        collector.push_str(&self.schema_name());
        collector.push('(');
        self.dict.to_value().collect_repr(collector);
        collector.push(')');
    }
}

impl Freeze for SchemaDict<'_> {
    type Frozen = FrozenSchemaDict;
    fn freeze(self, freezer: &Freezer) -> FreezeResult<FrozenSchemaDict> {
        Ok(SchemaDictGen {
            schema: self.schema.freeze(freezer)?,
            dict: self.dict.freeze(freezer)?,
        })
    }
}

impl<'v, V: ValueLike<'v>> fmt::Display for SchemaDictGen<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.render(&mut s);
        f.write_str(&s)
    }
}

fn error(e: anyhow::Error) -> starlark::Error {
    starlark::Error::new_other(e)
}

#[starlark_value(type = "dict")]
impl<'v, V: ValueLike<'v>> StarlarkValue<'v> for SchemaDictGen<V>
where
    Self: ProvidesStaticType<'v>,
{
    fn get_methods() -> Option<&'static Methods> {
        static METHODS: MethodsStatic = MethodsStatic::new("dict", schema_dict_methods);
        Some(METHODS.methods())
    }

    fn collect_repr(&self, collector: &mut String) {
        self.render(collector);
    }

    fn to_bool(&self) -> bool {
        !self.entries().is_empty()
    }

    fn write_hash(&self, _hasher: &mut StarlarkHasher) -> starlark::Result<()> {
        Err(error(anyhow!("unhashable type: dict")))
    }

    fn equals(&self, other: Value<'v>) -> starlark::Result<bool> {
        // By content, with every dict kind (the schema is ignored).
        let other = inner_dict(other).unwrap_or(other);
        if Entries::of(other).is_some() {
            return other.equals(self.dict.to_value());
        }
        self.dict.to_value().equals(other)
    }

    fn length(&self) -> starlark::Result<i32> {
        Ok(i32::try_from(self.entries().len()).unwrap_or(i32::MAX))
    }

    fn is_in(&self, other: Value<'v>) -> starlark::Result<bool> {
        Ok(self.entries().get(other)?.is_some())
    }

    fn at(&self, index: Value<'v>, _heap: Heap<'v>) -> starlark::Result<Value<'v>> {
        self.entries()
            .get(index)?
            .ok_or_else(|| error(anyhow!("key {} not in dict", index.to_repr())))
    }

    fn set_at(&self, index: Value<'v>, new_value: Value<'v>) -> starlark::Result<()> {
        self.insert(index, new_value).map_err(error)
    }

    fn get_attr(&self, attribute: &str, _heap: Heap<'v>) -> Option<Value<'v>> {
        Some(
            self.entries()
                .get_str(attribute)
                .unwrap_or_else(Value::new_none),
        )
    }

    fn has_attr(&self, _attribute: &str, _heap: Heap<'v>) -> bool {
        true
    }

    fn dir_attr(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .entries()
            .keys()
            .filter_map(|k| k.unpack_str().map(str::to_owned))
            .collect();
        names.extend(METHOD_NAMES.iter().map(|s| (*s).to_owned()));
        names.sort();
        names.dedup();
        names
    }

    fn set_attr(&self, attribute: &str, new_value: Value<'v>) -> starlark::Result<()> {
        // No heap here: the key is the schema's own str value for the field
        // (an unknown name fails validation before a key is needed).
        let key = self
            .schema_ref()
            .and_then(|s| s.field(attribute))
            .map(|(key, _)| key);
        if let Some(key) = key {
            return self.insert(key, new_value).map_err(error);
        }
        let message = self.schema_ref().map_or_else(
            || format!("{attribute}: unknown field"),
            |s| format!("{}: {}", s.name(), s.unknown_field(attribute, attribute)),
        );
        Err(error(anyhow!(message)))
    }

    fn iterate_collect(&self, _heap: Heap<'v>) -> starlark::Result<Vec<Value<'v>>> {
        Ok(self.entries().keys().collect())
    }
}

fn receiver(v: Value<'_>) -> anyhow::Result<&SchemaDict<'_>> {
    SchemaDict::from_value(v).ok_or_else(|| anyhow!("expected a schema dict receiver"))
}

#[starlark_module]
fn schema_dict_methods(builder: &mut MethodsBuilder) {
    /// The keys, as a new list.
    fn keys<'v>(this: Value<'v>) -> anyhow::Result<Vec<Value<'v>>> {
        Ok(receiver(this)?.entries().keys().collect())
    }

    /// The values, as a new list.
    fn values<'v>(this: Value<'v>) -> anyhow::Result<Vec<Value<'v>>> {
        Ok(receiver(this)?.entries().values().collect())
    }

    /// The entries, as a new list of `(key, value)` tuples.
    fn items<'v>(this: Value<'v>, heap: Heap<'v>) -> anyhow::Result<Vec<Value<'v>>> {
        Ok(receiver(this)?
            .entries()
            .iter()
            .map(|(k, v)| heap.alloc((k, v)))
            .collect())
    }

    /// The value under `key`, or `default`.
    fn get<'v>(
        this: Value<'v>,
        #[starlark(require = pos)] key: Value<'v>,
        #[starlark(require = pos)] default: Option<Value<'v>>,
    ) -> anyhow::Result<Value<'v>> {
        let found = receiver(this)?
            .entries()
            .get(key)
            .map_err(starlark::Error::into_anyhow)?;
        Ok(found.unwrap_or_else(|| default.unwrap_or_else(Value::new_none)))
    }

    /// Removes `key` and returns its value, or `default` when it is absent.
    fn pop<'v>(
        this: Value<'v>,
        #[starlark(require = pos)] key: Value<'v>,
        #[starlark(require = pos)] default: Option<Value<'v>>,
    ) -> anyhow::Result<Value<'v>> {
        let hashed = key.get_hashed().map_err(starlark::Error::into_anyhow)?;
        let removed = receiver(this)?.entries_mut()?.aref.remove_hashed(hashed);
        match (removed, default) {
            (Some(v), _) | (None, Some(v)) => Ok(v),
            (None, None) => Err(anyhow!("pop: key {} not found", key.to_repr())),
        }
    }

    /// Copies every entry of `other` (a dict or schema dict) in, validating
    /// each; stops at the first invalid one.
    fn update<'v>(
        this: Value<'v>,
        #[starlark(require = pos)] other: Value<'v>,
    ) -> anyhow::Result<NoneType> {
        let source = inner_dict(other).unwrap_or(other);
        let Some(pairs) = DictRef::from_value(source).map(|d| d.iter().collect::<Vec<_>>()) else {
            return Err(anyhow!(
                "update: unsupported argument type {}",
                crate::go::types::go_type(other)
            ));
        };
        let target = receiver(this)?;
        // A frozen dict refuses even an empty update.
        drop(target.entries_mut()?);
        for (k, v) in pairs {
            target.insert(k, v)?;
        }
        Ok(NoneType)
    }

    /// Removes every entry.
    fn clear<'v>(this: Value<'v>) -> anyhow::Result<NoneType> {
        receiver(this)?.entries_mut()?.aref.clear();
        Ok(NoneType)
    }

    /// The value under `key`; inserts `default` (validated) first when it
    /// is absent.
    fn setdefault<'v>(
        this: Value<'v>,
        #[starlark(require = pos)] key: Value<'v>,
        #[starlark(require = pos)] default: Option<Value<'v>>,
    ) -> anyhow::Result<Value<'v>> {
        let target = receiver(this)?;
        if let Some(v) = target
            .entries()
            .get(key)
            .map_err(starlark::Error::into_anyhow)?
        {
            return Ok(v);
        }
        let v = default.unwrap_or_else(Value::new_none);
        target.insert(key, v)?;
        Ok(v)
    }
}
