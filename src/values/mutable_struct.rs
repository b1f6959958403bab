//! `mutable_struct`: a struct whose fields can be set (`s.x = 1`) until it
//! is frozen, optionally bound to a `schema()` that validates every field
//! it is given, at construction and on each assignment.
//!
//! The fields live in a plain dict value the struct owns, as in the Go
//! implementation: freezing it freezes them, and everything that accepts a
//! struct as a body, a labels value or a `dict.*` argument reads that dict
//! ([`backing_dict`]).

use allocative::Allocative;
use anyhow::anyhow;
use starlark::collections::{SmallMap, StarlarkHasher};
use starlark::values::dict::{Dict, DictMut, DictRef};
use starlark::values::list::{AllocList, ListRef};
use starlark::values::{
    AllocFrozenValue, AllocValue, Freeze, FreezeResult, Freezer, FrozenHeap, FrozenValue, Heap,
    NoSerialize, ProvidesStaticType, StarlarkValue, Trace, Value, ValueLike, starlark_value,
};

use crate::go::types::go_type;
use crate::values::attr_dict::Entries;
use crate::values::schema::{
    FieldKind, Schema, SchemaDict, check_value, inner_dict, is_schema_dict, schema_name,
    validate_entries,
};

/// A mutable struct.
#[derive(Debug, Trace, ProvidesStaticType, NoSerialize, Allocative)]
pub struct MutableStruct<'v> {
    /// `None`, or the schema constructor it belongs to.
    schema: Value<'v>,
    /// A plain dict holding the fields.
    dict: Value<'v>,
    /// The heap the struct lives on: setting a field may allocate (a new
    /// key, a nested schema value), and `set_attr` is given no heap.
    #[trace(unsafe_ignore)]
    #[allocative(skip)]
    heap: OwnHeap<'v>,
}

/// The heap a struct lives on.
#[derive(Debug, Clone, Copy)]
struct OwnHeap<'v>(Heap<'v>);

// SAFETY: the heap is the one the struct itself is allocated on, so it
// moves between threads only together with it (inside the module that
// owns both), as the `Value`s beside it do, which starlark-rust marks
// `Send` for the same reason; one thread at a time uses a module's heap.
unsafe impl Send for OwnHeap<'_> {}

/// A frozen mutable struct: setting a field fails.
#[derive(Debug, ProvidesStaticType, NoSerialize, Allocative)]
pub struct FrozenMutableStruct {
    schema: FrozenValue,
    dict: FrozenValue,
}

impl<'v> MutableStruct<'v> {
    /// A struct of `schema` (`None` for none) over the plain dict `dict`.
    pub fn new(schema: Value<'v>, dict: Value<'v>, heap: Heap<'v>) -> Self {
        MutableStruct {
            schema,
            dict,
            heap: OwnHeap(heap),
        }
    }
}

/// The two halves of either flavour.
#[derive(Clone, Copy)]
pub struct View<'v> {
    /// The schema constructor, if the struct has one.
    pub schema: Option<&'v Schema<'v>>,
    /// The schema as a value (`None` when there is none).
    pub schema_value: Value<'v>,
    /// The plain dict of the fields.
    pub dict: Value<'v>,
}

impl<'v> View<'v> {
    /// The struct behind `v`, if it is one.
    pub fn of(v: Value<'v>) -> Option<Self> {
        let (schema, dict) = if let Some(s) = v.downcast_ref::<MutableStruct<'v>>() {
            (s.schema, s.dict)
        } else {
            let s = v.downcast_ref::<FrozenMutableStruct>()?;
            (s.schema.to_value(), s.dict.to_value())
        };
        Some(View {
            schema: Schema::from_value(schema),
            schema_value: schema,
            dict,
        })
    }

    fn fields(&self) -> DictRef<'v> {
        DictRef::from_value(self.dict).expect("a mutable struct holds a dict")
    }

    /// The fields in the order the struct prints them: the schema's order
    /// (unset ones left out), or sorted by name without a schema.
    pub fn printed_fields(&self) -> Vec<(String, Value<'v>)> {
        let fields = self.fields();
        if let Some(schema) = self.schema {
            return schema
                .declared()
                .filter_map(|(name, _, _)| fields.get_str(name).map(|v| (name.to_owned(), v)))
                .collect();
        }
        let mut out: Vec<(String, Value<'v>)> = fields
            .iter()
            .filter_map(|(k, v)| k.unpack_str().map(|k| (k.to_owned(), v)))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// What the struct prints before its fields: `NAME(` or `mutable_struct(`.
    pub fn opening(&self) -> String {
        match self.schema {
            Some(schema) => format!("{}(", schema.name()),
            None => "mutable_struct(".to_owned(),
        }
    }

    /// The attribute names: every field of the schema, or the fields set,
    /// sorted.
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = match self.schema {
            Some(schema) => schema.declared().map(|(n, _, _)| n.to_owned()).collect(),
            None => self
                .fields()
                .keys()
                .filter_map(|k| k.unpack_str().map(str::to_owned))
                .collect(),
        };
        names.sort();
        names
    }
}

/// The plain dict holding a mutable struct's fields, if `v` is one: what
/// `Resource()` bodies, `labels=`, the `dict` module and `yaml.encode`
/// read of it.
pub fn backing_dict(v: Value<'_>) -> Option<Value<'_>> {
    View::of(v).map(|view| view.dict)
}

/// The dict a value composes as: a schema dict's or a mutable struct's
/// entries, and any other value as it is. Bodies, `labels=`, the pipeline
/// context and `dxr` read dict-like values through it. (A mutable struct
/// is not a mapping otherwise: `field(type="dict")` refuses one.)
pub fn composed_dict(v: Value<'_>) -> Value<'_> {
    inner_dict(v).or_else(|| backing_dict(v)).unwrap_or(v)
}

impl Freeze for MutableStruct<'_> {
    type Frozen = FrozenMutableStruct;
    fn freeze(self, freezer: &Freezer) -> FreezeResult<FrozenMutableStruct> {
        Ok(FrozenMutableStruct {
            schema: self.schema.freeze(freezer)?,
            dict: self.dict.freeze(freezer)?,
        })
    }
}

impl<'v> AllocValue<'v> for MutableStruct<'v> {
    fn alloc_value(self, heap: Heap<'v>) -> Value<'v> {
        heap.alloc_complex(self)
    }
}

impl AllocFrozenValue for FrozenMutableStruct {
    fn alloc_frozen_value(self, heap: &FrozenHeap) -> FrozenValue {
        heap.alloc_simple(self)
    }
}

/// What assigning a value to a field of a schema-bound struct does.
pub enum Mutation<'v> {
    /// Store this value (the one given, a default, or the given one
    /// validated into a schema value).
    Store(Value<'v>),
    /// Remove the field: `None` for an optional field without a default.
    Delete,
}

/// Validates `name = value` on a struct bound to `schema` (a constructor
/// value), as the Go implementation's `ValidateMutation` does: the first
/// error only, prefixed with the schema's name. A dict (or a struct, or an
/// attribute-dict) for a nested-schema field, and the dicts of an
/// `items=` list, are validated into schema values on `heap`; without a
/// heap they are only checked.
pub fn validate_mutation<'v>(
    schema: Value<'v>,
    name: &str,
    value: Value<'v>,
    heap: Option<Heap<'v>>,
) -> anyhow::Result<Mutation<'v>> {
    let Some(s) = Schema::from_value(schema) else {
        return Ok(Mutation::Store(value));
    };
    let Some((_, descriptor)) = s.field(name) else {
        return Err(anyhow!("{}: {}", s.name(), s.unknown_field(name, name)));
    };
    if value.is_none() {
        if descriptor.is_required() {
            return Err(anyhow!(
                "{}.{name}: required field cannot be set to None",
                s.name()
            ));
        }
        return Ok(descriptor
            .default_value()
            .map_or(Mutation::Delete, Mutation::Store));
    }
    let fail = |e: &str| anyhow!("{}.{e}", s.name());
    let mut errors = Vec::new();
    let stored = match descriptor.kind() {
        FieldKind::Nested(sub) => {
            if is_schema_dict(value) {
                return Ok(Mutation::Store(value));
            }
            let Some(given) = dict_entries_for_mutation(value, heap) else {
                return Err(fail(&format!(
                    "{name}: expected {} or dict, got {}",
                    schema_name(sub),
                    go_type(value)
                )));
            };
            let entries = validate_entries(sub, &given, name, heap, &mut errors);
            match heap {
                Some(h) if errors.is_empty() => {
                    h.alloc(SchemaDict::new(sub, h.alloc(Dict::new(entries))))
                }
                _ => value,
            }
        }
        FieldKind::ListOf(items) => {
            let Some(list) = ListRef::from_value(value) else {
                return Err(fail(&format!(
                    "{name}: expected list, got {}",
                    go_type(value)
                )));
            };
            let mut checked = Vec::with_capacity(list.len());
            for (i, item) in list.iter().enumerate() {
                let at = format!("{name}[{i}]");
                if is_schema_dict(item) {
                    checked.push(item);
                    continue;
                }
                let Some(d) = DictRef::from_value(item) else {
                    return Err(fail(&format!(
                        "{at}: expected {} or dict, got {}",
                        schema_name(items),
                        go_type(item)
                    )));
                };
                let given: Vec<(Value<'v>, Value<'v>)> = d.iter().collect();
                let entries = validate_entries(items, &given, &at, heap, &mut errors);
                if let Some(first) = errors.first() {
                    return Err(fail(first));
                }
                checked.push(match heap {
                    Some(h) => h.alloc(SchemaDict::new(items, h.alloc(Dict::new(entries)))),
                    None => item,
                });
            }
            heap.map_or(value, |h| h.alloc(AllocList(checked)))
        }
        FieldKind::Primitive(_) | FieldKind::Any => {
            check_value(descriptor, name, value, None, &mut errors);
            value
        }
    };
    match errors.first() {
        Some(first) => Err(fail(first)),
        None => Ok(Mutation::Store(stored)),
    }
}

/// The entries a nested-schema field validates from an assigned value: a
/// plain dict's, a mutable struct's or an attribute-dict's (keys allocated
/// on `heap`, or skipped when there is none to check only).
fn dict_entries_for_mutation<'v>(
    value: Value<'v>,
    heap: Option<Heap<'v>>,
) -> Option<Vec<(Value<'v>, Value<'v>)>> {
    let value = backing_dict(value).unwrap_or(value);
    if let Some(d) = DictRef::from_value(value) {
        return Some(d.iter().collect());
    }
    let entries = Entries::of(value)?;
    Some(entries.with(|m| {
        m.iter()
            .filter_map(|(k, v)| heap.map(|h| (h.alloc_str(k).to_value(), *v)))
            .collect()
    }))
}

/// Merges `left + right` (right wins): the result has the schema of either
/// (two different schemas do not merge), and every field the right side
/// brings is validated against it.
fn merge<'v>(left: View<'v>, right: View<'v>, heap: Heap<'v>) -> anyhow::Result<Value<'v>> {
    let schema = match (left.schema, right.schema) {
        (Some(a), Some(b)) if !left.schema_value.ptr_eq(right.schema_value) => {
            return Err(anyhow!(
                "cannot merge mutable_struct: schemas differ ({} vs {})",
                a.name(),
                b.name()
            ));
        }
        (Some(_), _) => left.schema_value,
        (None, _) => right.schema_value,
    };
    let mut merged = Dict::new(SmallMap::new());
    for (key, value) in left.fields().iter_hashed() {
        merged.insert_hashed(key, value);
    }
    for (key, value) in right.fields().iter_hashed() {
        let name = key.key().unpack_str();
        match (name, Schema::from_value(schema)) {
            (Some(name), Some(_)) => match validate_mutation(schema, name, value, Some(heap))? {
                Mutation::Store(v) => {
                    merged.insert_hashed(key, v);
                }
                Mutation::Delete => {
                    merged.remove_hashed(key);
                }
            },
            _ => {
                merged.insert_hashed(key, value);
            }
        }
    }
    Ok(heap.alloc(MutableStruct::new(schema, heap.alloc(merged), heap)))
}

// The two flavours share every behaviour but setting a field. (A `tt`
// list, because `#[starlark_value]` needs a plain path.)
macro_rules! mutable_struct_value_impl {
    ($($ty:tt)+) => {
        #[starlark_value(type = "mutable_struct")]
        impl<'v> StarlarkValue<'v> for $($ty)+ {
            type Canonical = MutableStruct<'v>;

            fn collect_repr(&self, collector: &mut String) {
                collector.push_str(&self.to_string());
            }

            fn to_bool(&self) -> bool {
                true
            }

            fn write_hash(&self, _hasher: &mut StarlarkHasher) -> starlark::Result<()> {
                Err(starlark::Error::new_other(anyhow!("unhashable type: mutable_struct")))
            }

            fn equals(&self, other: Value<'v>) -> starlark::Result<bool> {
                let Some(other) = View::of(other) else {
                    return Ok(false);
                };
                self.view().dict.equals(other.dict)
            }

            fn get_attr(&self, attribute: &str, _heap: Heap<'v>) -> Option<Value<'v>> {
                self.view().fields().get_str(attribute)
            }

            fn has_attr(&self, attribute: &str, _heap: Heap<'v>) -> bool {
                self.view().fields().get_str(attribute).is_some()
            }

            fn dir_attr(&self) -> Vec<String> {
                self.view().names()
            }

            fn add(&self, rhs: Value<'v>, heap: Heap<'v>) -> Option<starlark::Result<Value<'v>>> {
                let right = View::of(rhs)?;
                Some(merge(self.view(), right, heap).map_err(starlark::Error::new_other))
            }

            fn set_attr(&self, attribute: &str, new_value: Value<'v>) -> starlark::Result<()> {
                self.set_field(attribute, new_value).map_err(starlark::Error::new_other)
            }
        }
    };
}

mutable_struct_value_impl!(MutableStruct<'v>);
mutable_struct_value_impl!(FrozenMutableStruct);

impl<'v> MutableStruct<'v> {
    /// The struct's two halves.
    pub fn view(&self) -> View<'v> {
        View {
            schema: Schema::from_value(self.schema),
            schema_value: self.schema,
            dict: self.dict,
        }
    }

    /// `s.name = value`: validated against the schema first, then stored
    /// (or, for `None` on an optional field without a default, removed).
    fn set_field(&self, name: &str, value: Value<'v>) -> anyhow::Result<()> {
        let mutation = if Schema::from_value(self.schema).is_some() {
            validate_mutation(self.schema, name, value, Some(self.heap.0))?
        } else {
            Mutation::Store(value)
        };
        let key = match self
            .view()
            .fields()
            .iter()
            .find(|(k, _)| k.unpack_str() == Some(name))
        {
            Some((k, _)) => k,
            None => match Schema::from_value(self.schema).and_then(|s| s.field(name)) {
                Some((key, _)) => key,
                None => self.heap.0.alloc_str(name).to_value(),
            },
        };
        let key = key.get_hashed().map_err(starlark::Error::into_anyhow)?;
        let mut fields = DictMut::from_value(self.dict)?;
        match mutation {
            Mutation::Store(v) => {
                fields.aref.insert_hashed(key, v);
            }
            Mutation::Delete => {
                fields.aref.remove_hashed(key);
            }
        }
        Ok(())
    }
}

impl FrozenMutableStruct {
    /// The struct's two halves.
    pub fn view<'v>(&self) -> View<'v> {
        View {
            schema: Schema::from_value(self.schema.to_value()),
            schema_value: self.schema.to_value(),
            dict: self.dict.to_value(),
        }
    }

    /// A frozen struct refuses every assignment, after the schema has had
    /// its say (its errors come first, as in the Go implementation).
    fn set_field(&self, name: &str, value: Value<'_>) -> anyhow::Result<()> {
        let schema = self.schema.to_value();
        let mutation = if Schema::from_value(schema).is_some() {
            validate_mutation(schema, name, value, None)?
        } else {
            Mutation::Store(value)
        };
        Err(match mutation {
            Mutation::Store(_) => anyhow!("cannot insert into frozen hash table"),
            Mutation::Delete => anyhow!("cannot delete from frozen hash table"),
        })
    }
}
