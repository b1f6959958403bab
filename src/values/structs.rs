//! `struct`: an immutable record with fields kept sorted by name, printed
//! as `struct(a = 1, b = "x")`, and joined with `+`, as in the Go dialect.

use allocative::Allocative;
use starlark::coerce::Coerce;
use starlark::collections::{SmallMap, StarlarkHasher};
use starlark::starlark_complex_value;
use starlark::values::{
    Freeze, FreezeResult, Freezer, FrozenValue, Heap, NoSerialize, ProvidesStaticType,
    StarlarkValue, Trace, Value, ValueLike, starlark_value,
};

/// A struct value; `V` is `Value` or `FrozenValue`.
#[derive(Debug, Clone, Trace, Coerce, ProvidesStaticType, NoSerialize, Allocative)]
#[repr(C)]
pub struct RecordGen<V> {
    fields: SmallMap<String, V>,
}

starlark_complex_value!(pub Record);

impl<'v> Record<'v> {
    /// A struct with these fields, which are sorted here.
    pub fn new(mut fields: Vec<(String, Value<'v>)>) -> Self {
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        RecordGen {
            fields: fields.into_iter().collect(),
        }
    }
}

impl<'v, V: ValueLike<'v>> RecordGen<V> {
    /// The fields, sorted by name.
    pub fn fields(&self) -> impl Iterator<Item = (&str, Value<'v>)> {
        self.fields.iter().map(|(k, v)| (k.as_str(), v.to_value()))
    }
}

impl Freeze for Record<'_> {
    type Frozen = FrozenRecord;
    fn freeze(self, freezer: &Freezer) -> FreezeResult<FrozenRecord> {
        let mut fields = SmallMap::with_capacity(self.fields.len());
        for (k, v) in self.fields {
            fields.insert(k, v.freeze(freezer)?);
        }
        Ok(RecordGen { fields })
    }
}

#[starlark_value(type = "struct")]
impl<'v, V: ValueLike<'v>> StarlarkValue<'v> for RecordGen<V>
where
    Self: ProvidesStaticType<'v>,
{
    fn collect_repr(&self, collector: &mut String) {
        collector.push_str(&self.to_string());
    }

    fn equals(&self, other: Value<'v>) -> starlark::Result<bool> {
        let Some(other) = Record::from_value(other) else {
            return Ok(false);
        };
        if self.fields.len() != other.fields.len() {
            return Ok(false);
        }
        for ((ka, va), (kb, vb)) in self.fields().zip(other.fields()) {
            if ka != kb || !va.equals(vb)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn write_hash(&self, hasher: &mut StarlarkHasher) -> starlark::Result<()> {
        for (k, v) in self.fields() {
            std::hash::Hash::hash(k, hasher);
            v.write_hash(hasher)?;
        }
        Ok(())
    }

    fn get_attr(&self, attribute: &str, _heap: Heap<'v>) -> Option<Value<'v>> {
        self.fields.get(attribute).map(|v| v.to_value())
    }

    fn has_attr(&self, attribute: &str, _heap: Heap<'v>) -> bool {
        self.fields.contains_key(attribute)
    }

    fn dir_attr(&self) -> Vec<String> {
        self.fields
            .keys()
            .map(|k| crate::go::names::unreserve(k).to_owned())
            .collect()
    }

    fn add(&self, rhs: Value<'v>, heap: Heap<'v>) -> Option<starlark::Result<Value<'v>>> {
        let rhs = Record::from_value(rhs)?;
        let mut fields: SmallMap<String, Value<'v>> =
            self.fields().map(|(k, v)| (k.to_owned(), v)).collect();
        for (k, v) in rhs.fields() {
            fields.insert(k.to_owned(), v);
        }
        let mut fields: Vec<_> = fields.into_iter().collect();
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        Some(Ok(heap.alloc(Record::new(fields))))
    }
}

/// Keeps the frozen alias in use for readers of the type list.
pub type FrozenStruct = RecordGen<FrozenValue>;
