//! How a schema dict (what a schema constructor returns; the type is in
//! `schema`) behaves: a dict (`type()` is `"dict"`) bound to its schema, printed as `NAME({...})`, with the
//! attribute-dict's dot access and methods, and every insertion validated
//! against the schema.
//!
//! The entries live in an ordinary dict value it owns, so keys keep their
//! order and may be any hashable value (only string keys are validated).

use std::fmt;

use anyhow::anyhow;
use starlark::collections::StarlarkHasher;
use starlark::environment::Methods;
use starlark::values::dict::{DictMut, DictRef};
use starlark::values::{
    Demand, Heap, ProvidesStaticType, StarlarkValue, Value, ValueLike, starlark_value,
};

use crate::values::attr_dict::Entries;
use crate::values::dict_methods::{self, DictReceiver, METHOD_NAMES};
use crate::values::schema::{Schema, SchemaDictGen, check_value, inner_dict};

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
        dict_methods::methods()
    }

    fn provide(&'v self, demand: &mut Demand<'_, 'v>) {
        demand.provide_value::<&dyn DictReceiver<'v>>(self);
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

impl<'v, V: ValueLike<'v>> DictReceiver<'v> for SchemaDictGen<V> {
    fn key_list(&self, _heap: Heap<'v>) -> Vec<Value<'v>> {
        self.entries().keys().collect()
    }

    fn value_list(&self) -> Vec<Value<'v>> {
        self.entries().values().collect()
    }

    fn lookup(&self, key: Value<'v>) -> anyhow::Result<Option<Value<'v>>> {
        self.entries()
            .get(key)
            .map_err(starlark::Error::into_anyhow)
    }

    fn remove(&self, key: Value<'v>) -> anyhow::Result<Option<Value<'v>>> {
        let hashed = key.get_hashed().map_err(starlark::Error::into_anyhow)?;
        Ok(self.entries_mut()?.aref.remove_hashed(hashed))
    }

    fn store(&self, key: Value<'v>, value: Value<'v>) -> anyhow::Result<()> {
        self.insert(key, value)
    }

    /// Validates every entry of `other` (a dict or schema dict) in turn,
    /// stopping at the first invalid one.
    fn update_from(&self, other: Value<'v>) -> anyhow::Result<()> {
        let source = inner_dict(other).unwrap_or(other);
        let Some(pairs) = DictRef::from_value(source).map(|d| d.iter().collect::<Vec<_>>()) else {
            return Err(anyhow!(
                "update: unsupported argument type {}",
                crate::go::types::go_type(other)
            ));
        };
        // A frozen dict refuses even an empty update.
        drop(self.entries_mut()?);
        for (k, v) in pairs {
            self.insert(k, v)?;
        }
        Ok(())
    }

    fn clear(&self) -> anyhow::Result<()> {
        self.entries_mut()?.aref.clear();
        Ok(())
    }
}
