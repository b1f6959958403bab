//! `schema()` and `field()`: validating constructors for dicts. The value
//! types and the validation itself are in `crate::values::schema` and
//! `crate::values::schema_dict`.

use anyhow::anyhow;
use starlark::collections::SmallMap;
use starlark::environment::GlobalsBuilder;
use starlark::starlark_module;
use starlark::values::dict::{Dict, DictRef};
use starlark::values::list::ListRef;
use starlark::values::tuple::UnpackTuple;
use starlark::values::{Heap, Value};

use crate::go::args::GoArgs;
use crate::go::args::want_string;
use crate::go::quote::go_quote;
use crate::go::types::go_type;
use crate::values::mutable_struct::MutableStruct;
use crate::values::schema::{
    Field, FieldGen, PRIMITIVE_TYPES, Schema, SchemaGen, aggregate, validate_entries,
};

/// The `type=` of a field, checked: a str naming a primitive type (or
/// `""`), or a schema constructor.
fn field_type<'v>(ty: Option<Value<'v>>, heap: Heap<'v>) -> anyhow::Result<Value<'v>> {
    let Some(ty) = ty else {
        return Ok(heap.alloc(""));
    };
    if let Some(name) = ty.unpack_str() {
        if !name.is_empty() && !PRIMITIVE_TYPES.contains(&name) {
            return Err(anyhow!(
                "field: for parameter type: invalid type {}; valid types: {}",
                go_quote(name),
                PRIMITIVE_TYPES.join(", ")
            ));
        }
        return Ok(ty);
    }
    if Schema::from_value(ty).is_some() {
        return Ok(ty);
    }
    Err(anyhow!(
        "field: for parameter type: type= must be a string or schema, got {}",
        go_type(ty)
    ))
}

#[starlark_module]
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    /// Builds a validating constructor for dicts with the given fields.
    ///
    /// Calling the constructor with keyword arguments checks every field
    /// (unknown names, required fields, types, enums, nested schemas) and
    /// returns a dict bound to the schema, printed as `NAME({...})`, which
    /// keeps validating every later insertion. All problems are reported
    /// together: `NAME: 2 validation errors:` followed by one `- PATH:
    /// message` line each.
    ///
    /// `schema(name, doc="", **fields)`: `name` is the only positional
    /// argument (a str); `doc` a str describing the schema; every other
    /// keyword names a field and gives its `field(...)` descriptor, in
    /// declaration order. The constructor has `.name`, `.doc` and `.fields`.
    ///
    /// # Example
    /// ```python
    /// Bucket = schema("Bucket",
    ///     region = field(type = "string", required = True),
    ///     acl = field(type = "string", default = "private", enum = ["private", "public-read"]),
    /// )
    /// b = Bucket(region = "eu-west-1")   # Bucket({"region": "eu-west-1", "acl": "private"})
    /// ```
    fn schema<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        heap: Heap<'v>,
    ) -> anyhow::Result<Value<'v>> {
        let [name] = args.items.as_slice() else {
            return Err(anyhow!(
                "schema: requires exactly 1 positional argument (name), got {}",
                args.items.len()
            ));
        };
        let Some(name) = name.unpack_str() else {
            return Err(anyhow!(
                "schema: name must be a string, got {}",
                go_type(*name)
            ));
        };
        let mut doc = String::new();
        let mut fields = SmallMap::with_capacity(kwargs.len());
        for (key, value) in kwargs.iter() {
            let key_str = key.unpack_str().unwrap_or_default();
            if key_str == "doc" {
                value
                    .unpack_str()
                    .ok_or_else(|| anyhow!("schema: doc must be a string, got {}", go_type(value)))?
                    .clone_into(&mut doc);
                continue;
            }
            if Field::from_value(value).is_none() {
                return Err(anyhow!(
                    "schema: field {} value must be a field(), got {}",
                    go_quote(key_str),
                    go_type(value)
                ));
            }
            fields.insert(key_str.to_owned(), (key, value));
        }
        Ok(heap.alloc(SchemaGen {
            name: name.to_owned(),
            doc,
            fields,
        }))
    }

    /// Describes one field of a `schema`.
    ///
    /// `field(type="", required=False, default=None, enum=None, doc="",
    /// items=None)`:
    /// * `type`: `""` (anything), `"string"`, `"int"`, `"float"` (ints are
    ///   rejected), `"bool"`, `"list"`, `"dict"` (any dict kind), or a schema
    ///   for a nested dict (plain dicts given for it are validated).
    /// * `required`: the field must be given and not `None`; excludes `default`.
    /// * `default`: stored when the field is omitted or `None` (not validated,
    ///   and shared by every result); `None` means no default.
    /// * `enum`: a list of the allowed values.
    /// * `doc`: a str describing the field.
    /// * `items`: with `type="list"`, a schema every element must satisfy.
    ///
    /// # Example
    /// ```python
    /// Rule = schema("Rule", port = field(type = "int", required = True))
    /// rules = field(type = "list", items = Rule)
    /// size = field(type = "string", default = "small", enum = ["small", "large"])
    /// ```
    fn field<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        heap: Heap<'v>,
    ) -> anyhow::Result<Value<'v>> {
        let params = ["type?", "required?", "default?", "enum?", "doc?", "items?"];
        let bound = GoArgs::new("field", args, kwargs).bind(&params, true, |i, v| match i {
            1 if v.unpack_bool().is_none() => Err(format!("got {}, want bool", go_type(v))),
            4 => want_string(v),
            _ => Ok(()),
        })?;
        let [ty, required, default, r#enum, doc, items] =
            std::array::from_fn(|i| bound.get(i).copied().flatten());
        let ty = field_type(ty, heap)?;
        let required = required.and_then(Value::unpack_bool).unwrap_or(false);
        let doc = doc.unwrap_or_else(|| heap.alloc(""));
        let items = items.unwrap_or_else(Value::new_none);
        if !items.is_none() {
            if Schema::from_value(items).is_none() {
                return Err(anyhow!(
                    "field: items= must be a schema, got {}",
                    go_type(items)
                ));
            }
            if ty.unpack_str() != Some("list") {
                return Err(anyhow!("field: items= is only valid when type=\"list\""));
            }
        }
        let enum_values = r#enum.unwrap_or_else(Value::new_none);
        if !enum_values.is_none() && ListRef::from_value(enum_values).is_none() {
            return Err(anyhow!(
                "field: enum must be a list, got {}",
                go_type(enum_values)
            ));
        }
        let default = default.unwrap_or_else(Value::new_none);
        if required && !default.is_none() {
            return Err(anyhow!(
                "field: required and default are mutually exclusive"
            ));
        }
        Ok(heap.alloc(FieldGen {
            ty,
            items,
            required: Value::new_bool(required),
            default,
            enum_values,
            doc,
        }))
    }

    /// A struct whose fields can be set (`s.x = 1`) until it is frozen,
    /// optionally validated against a `schema()`.
    ///
    /// `mutable_struct(**fields)` keeps the fields as given.
    /// `mutable_struct(schema=S, **fields)` validates them as calling `S`
    /// does (all problems at once, defaults applied), and then every
    /// assignment: an unknown field, a wrong type or a value outside the
    /// enum fails; `None` on an optional field restores its default or
    /// removes it; a dict given to a nested-schema field is validated.
    /// `a + b` merges two structs (the right side wins, validated against
    /// the schema either has). A struct is a `Resource()` body, a
    /// `labels=` value and a `dict.*` argument wherever a dict is, and
    /// `json.encode` and `yaml.encode` write it as a mapping.
    ///
    /// # Returns
    /// A `mutable_struct`, printed as `mutable_struct(a = 1)` (fields
    /// sorted) or `NAME(a = 1)` (the schema's order).
    ///
    /// # Example
    /// ```python
    /// spec = mutable_struct(region = "eu-west-1")
    /// spec.tier = "gold"
    /// str(spec)  # 'mutable_struct(region = "eu-west-1", tier = "gold")'
    /// Spec = schema("Spec", sku = field(type = "string", default = "Standard"))
    /// typed = mutable_struct(schema = Spec)
    /// typed.sku  # "Standard"
    /// ```
    fn mutable_struct<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        heap: Heap<'v>,
    ) -> anyhow::Result<Value<'v>> {
        if !args.items.is_empty() {
            return Err(anyhow!("mutable_struct: unexpected positional arguments"));
        }
        let mut schema = Value::new_none();
        let mut fields: Vec<(Value<'v>, Value<'v>)> = Vec::with_capacity(kwargs.len());
        for (key, value) in kwargs.iter() {
            if key.unpack_str() == Some("schema") {
                if Schema::from_value(value).is_none() {
                    return Err(anyhow!(
                        "mutable_struct: schema= must be a schema(), got {}",
                        go_type(value)
                    ));
                }
                schema = value;
            } else {
                fields.push((key, value));
            }
        }
        let entries = if let Some(s) = Schema::from_value(schema) {
            let mut errors = Vec::new();
            let entries = validate_entries(schema, &fields, "", Some(heap), &mut errors);
            if !errors.is_empty() {
                return Err(anyhow!("{}", aggregate(s.name(), &errors)));
            }
            entries
        } else {
            let mut entries = SmallMap::with_capacity(fields.len());
            for (key, value) in fields {
                let key = key.get_hashed().map_err(starlark::Error::into_anyhow)?;
                entries.insert_hashed(key, value);
            }
            entries
        };
        let dict = heap.alloc(Dict::new(entries));
        Ok(heap.alloc(MutableStruct::new(schema, dict, heap)))
    }
}

#[cfg(test)]
mod tests;
