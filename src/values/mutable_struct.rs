//! `mutable_struct`: a struct whose fields can be set (`s.x = 1`) until it
//! is frozen, optionally bound to a `schema()` that validates every field
//! it is given, at construction and on each assignment.
//!
//! The fields live in a plain dict value the struct owns, as in the Go
//! implementation: freezing it freezes them, and everything that accepts a
//! struct as a body, a labels value or a `dict.*` argument reads that dict
//! ([`backing_dict`]).

use std::fmt;

use allocative::Allocative;
use anyhow::anyhow;
use starlark::collections::{SmallMap, StarlarkHasher};
use starlark::values::dict::{Dict, DictMut, DictRef};
use starlark::values::{
    AllocFrozenValue, AllocValue, Freeze, FreezeResult, Freezer, FrozenHeap, FrozenValue, Heap,
    NoSerialize, ProvidesStaticType, StarlarkValue, Trace, Value, ValueLike, starlark_value,
};

use crate::values::schema::{Mutation, Schema, validate_mutation};

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
    crate::values::schema_dict::inner_dict(v)
        .or_else(|| backing_dict(v))
        .unwrap_or(v)
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

/// Renders the struct as the Go implementation prints it; nested values
/// through [`crate::values::text`].
fn render(view: &View, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_str(&view.opening())?;
    for (i, (name, value)) in view.printed_fields().iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(
            f,
            "{} = {}",
            crate::go::names::unreserve(name),
            crate::values::text::repr(*value)
        )?;
    }
    f.write_str(")")
}

impl fmt::Display for MutableStruct<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let view = View {
            schema: Schema::from_value(self.schema),
            schema_value: self.schema,
            dict: self.dict,
        };
        render(&view, f)
    }
}

impl fmt::Display for FrozenMutableStruct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let view = View {
            schema: Schema::from_value(self.schema.to_value()),
            schema_value: self.schema.to_value(),
            dict: self.dict.to_value(),
        };
        render(&view, f)
    }
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
    fn view(&self) -> View<'v> {
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
    fn view<'v>(&self) -> View<'v> {
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
