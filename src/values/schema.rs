//! `schema` constructors and `field` descriptors, the type of the dicts a
//! constructor returns, and the validation they perform. How those dicts
//! behave is in `schema_dict`; assignments to mutable structs are checked
//! in `mutable_struct`.
//!
//! Every piece of a descriptor is kept as a Starlark value, so one generic
//! type serves both the mutable and the frozen flavour.

use std::fmt;

use allocative::Allocative;
use anyhow::anyhow;
use starlark::coerce::Coerce;
use starlark::collections::{SmallMap, StarlarkHasher};
use starlark::eval::{Arguments, Evaluator};
use starlark::starlark_complex_value;
use starlark::values::dict::{Dict, DictRef};
use starlark::values::list::{AllocList, ListRef};
use starlark::values::{
    Freeze, FreezeResult, Freezer, Heap, NoSerialize, ProvidesStaticType, StarlarkValue, Trace,
    Value, ValueLike, starlark_value,
};

use crate::go::quote::go_quote;
use crate::go::types::go_type;
use crate::values::attr_dict::Entries;

/// The primitive type names a field may declare, sorted.
pub const PRIMITIVE_TYPES: [&str; 6] = ["bool", "dict", "float", "int", "list", "string"];

/// A `field()` descriptor. `V` is `Value` or `FrozenValue`.
#[derive(Debug, Clone, Trace, Coerce, ProvidesStaticType, NoSerialize, Allocative)]
#[repr(C)]
pub struct FieldGen<V> {
    /// A str (`""` or a primitive type name) or a schema constructor.
    pub(crate) ty: V,
    /// `None`, or the schema of a `type="list"` field's elements.
    pub(crate) items: V,
    /// A bool.
    pub(crate) required: V,
    /// Any value; `None` means no default.
    pub(crate) default: V,
    /// `None` or a list.
    pub(crate) enum_values: V,
    /// A str.
    pub(crate) doc: V,
}

starlark_complex_value!(pub Field);

/// A schema constructor. `V` is `Value` or `FrozenValue`.
#[derive(Debug, Clone, Trace, Coerce, ProvidesStaticType, NoSerialize, Allocative)]
#[repr(C)]
pub struct SchemaGen<V> {
    pub(crate) name: String,
    pub(crate) doc: String,
    /// Field name → (the name as a str value, the descriptor), in
    /// declaration order.
    pub(crate) fields: SmallMap<String, (V, V)>,
}

starlark_complex_value!(pub Schema);

/// A schema dict: what a schema constructor returns. `V` is `Value` or
/// `FrozenValue`. The type is here, beside the validation that makes one;
/// how it behaves as a dict is in `schema_dict`.
#[derive(Debug, Clone, Trace, Coerce, ProvidesStaticType, NoSerialize, Allocative)]
#[repr(C)]
pub struct SchemaDictGen<V> {
    /// The schema constructor it belongs to.
    pub(crate) schema: V,
    /// A plain dict holding the entries.
    pub(crate) dict: V,
}

starlark_complex_value!(pub SchemaDict);

impl<'v> SchemaDict<'v> {
    /// A schema dict of `schema` (a constructor) over the plain dict `dict`.
    pub fn new(schema: Value<'v>, dict: Value<'v>) -> Self {
        SchemaDictGen { schema, dict }
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

/// The plain dict holding a schema dict's entries, if `v` is one.
pub fn inner_dict(v: Value<'_>) -> Option<Value<'_>> {
    SchemaDict::from_value(v).map(|s| s.dict)
}

/// True for a schema dict.
pub fn is_schema_dict(v: Value) -> bool {
    SchemaDict::from_value(v).is_some()
}

/// What a field accepts.
pub enum FieldKind<'v> {
    /// Anything (`type=""`).
    Any,
    /// A primitive type name.
    Primitive(&'v str),
    /// A nested schema (`type=S`).
    Nested(Value<'v>),
    /// A list of a schema (`type="list", items=S`).
    ListOf(Value<'v>),
}

impl<'v, V: ValueLike<'v>> FieldGen<V> {
    /// Whether the field is required.
    pub fn is_required(&self) -> bool {
        self.required.to_value().unpack_bool() == Some(true)
    }

    /// The default, if the field has one.
    pub fn default_value(&self) -> Option<Value<'v>> {
        Some(self.default.to_value()).filter(|v| !v.is_none())
    }

    /// What the field accepts.
    pub fn kind(&self) -> FieldKind<'v> {
        let ty = self.ty.to_value();
        let items = self.items.to_value();
        match ty.unpack_str() {
            Some("list") if !items.is_none() => FieldKind::ListOf(items),
            Some("") => FieldKind::Any,
            Some(name) => FieldKind::Primitive(name),
            None => FieldKind::Nested(ty),
        }
    }

    /// The type as `.type` and `str()` show it: the primitive name, the
    /// nested schema's name, or `""`.
    fn type_name(&self) -> String {
        let ty = self.ty.to_value();
        match ty.unpack_str() {
            Some(s) => s.to_owned(),
            None => schema_name(ty),
        }
    }
}

impl Freeze for Field<'_> {
    type Frozen = FrozenField;
    fn freeze(self, freezer: &Freezer) -> FreezeResult<FrozenField> {
        Ok(FieldGen {
            ty: self.ty.freeze(freezer)?,
            items: self.items.freeze(freezer)?,
            required: self.required.freeze(freezer)?,
            default: self.default.freeze(freezer)?,
            enum_values: self.enum_values.freeze(freezer)?,
            doc: self.doc.freeze(freezer)?,
        })
    }
}

impl<'v, V: ValueLike<'v>> fmt::Display for FieldGen<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        let ty = self.type_name();
        if !ty.is_empty() {
            parts.push(format!("type={ty}"));
        }
        let items = self.items.to_value();
        if !items.is_none() {
            parts.push(format!("items={}", schema_name(items)));
        }
        if self.is_required() {
            parts.push("required".to_owned());
        }
        if let Some(default) = self.default_value() {
            parts.push(format!("default={}", default.to_repr()));
        }
        let enum_values = self.enum_values.to_value();
        if !enum_values.is_none() {
            parts.push(format!("enum={}", enum_values.to_repr()));
        }
        if parts.is_empty() {
            f.write_str("<field>")
        } else {
            write!(f, "<field {}>", parts.join(" "))
        }
    }
}

fn unhashable(ty: &str) -> starlark::Error {
    starlark::Error::new_other(anyhow!("unhashable type: {ty}"))
}

#[starlark_value(type = "field")]
impl<'v, V: ValueLike<'v>> StarlarkValue<'v> for FieldGen<V>
where
    Self: ProvidesStaticType<'v>,
{
    fn collect_repr(&self, collector: &mut String) {
        collector.push_str(&self.to_string());
    }

    fn write_hash(&self, _hasher: &mut StarlarkHasher) -> starlark::Result<()> {
        Err(unhashable("field"))
    }

    fn get_attr(&self, attribute: &str, heap: Heap<'v>) -> Option<Value<'v>> {
        Some(match attribute {
            "type" => heap.alloc(self.type_name()),
            "required" => self.required.to_value(),
            "default" => self.default.to_value(),
            "enum" => self.enum_values.to_value(),
            "doc" => self.doc.to_value(),
            _ => return None,
        })
    }

    fn has_attr(&self, attribute: &str, _heap: Heap<'v>) -> bool {
        FIELD_ATTRS.contains(&attribute)
    }

    fn dir_attr(&self) -> Vec<String> {
        FIELD_ATTRS.iter().map(|s| (*s).to_owned()).collect()
    }
}

const FIELD_ATTRS: [&str; 5] = ["default", "doc", "enum", "required", "type"];

/// The name of a schema constructor value (empty for anything else).
pub fn schema_name(v: Value) -> String {
    Schema::from_value(v).map_or_else(String::new, |s| s.name.clone())
}

impl<'v, V: ValueLike<'v>> SchemaGen<V> {
    /// The schema's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The declared field `name`: its name as a str value and its descriptor.
    pub fn field(&self, name: &str) -> Option<(Value<'v>, &'v Field<'v>)> {
        let (key, descriptor) = self.fields.get(name)?;
        let descriptor = Field::from_value(descriptor.to_value())?;
        Some((key.to_value(), descriptor))
    }

    /// The declared fields, in declaration order.
    pub fn declared(&self) -> impl Iterator<Item = (&str, Value<'v>, &'v Field<'v>)> {
        self.fields.iter().filter_map(|(name, (key, descriptor))| {
            Field::from_value(descriptor.to_value()).map(|d| (name.as_str(), key.to_value(), d))
        })
    }

    /// The "unknown field" error for `key` at `path`.
    pub fn unknown_field(&self, path: &str, key: &str) -> String {
        let names: Vec<&str> = self.fields.keys().map(String::as_str).collect();
        match suggest(key, &names) {
            Some(s) => format!("{path}: unknown field (did you mean {}?)", go_quote(s)),
            None => format!("{path}: unknown field; valid fields: {}", names.join(", ")),
        }
    }
}

impl Freeze for Schema<'_> {
    type Frozen = FrozenSchema;
    fn freeze(self, freezer: &Freezer) -> FreezeResult<FrozenSchema> {
        let mut fields = SmallMap::with_capacity(self.fields.len());
        for (name, (key, descriptor)) in self.fields {
            fields.insert(name, (key.freeze(freezer)?, descriptor.freeze(freezer)?));
        }
        Ok(SchemaGen {
            name: self.name,
            doc: self.doc,
            fields,
        })
    }
}

impl<V> fmt::Display for SchemaGen<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<schema {}>", self.name)
    }
}

const SCHEMA_ATTRS: [&str; 3] = ["doc", "fields", "name"];

#[starlark_value(type = "schema")]
impl<'v, V: ValueLike<'v>> StarlarkValue<'v> for SchemaGen<V>
where
    Self: ProvidesStaticType<'v>,
{
    fn collect_repr(&self, collector: &mut String) {
        collector.push_str(&self.to_string());
    }

    fn write_hash(&self, _hasher: &mut StarlarkHasher) -> starlark::Result<()> {
        Err(unhashable("schema"))
    }

    fn get_attr(&self, attribute: &str, heap: Heap<'v>) -> Option<Value<'v>> {
        Some(match attribute {
            "name" => heap.alloc(self.name.as_str()),
            "doc" => heap.alloc(self.doc.as_str()),
            "fields" => {
                let mut map = SmallMap::with_capacity(self.fields.len());
                for (key, descriptor) in self.fields.values() {
                    let key = key.to_value().get_hashed().ok()?;
                    map.insert_hashed(key, descriptor.to_value());
                }
                heap.alloc(Dict::new(map))
            }
            _ => return None,
        })
    }

    fn has_attr(&self, attribute: &str, _heap: Heap<'v>) -> bool {
        SCHEMA_ATTRS.contains(&attribute)
    }

    fn dir_attr(&self) -> Vec<String> {
        SCHEMA_ATTRS.iter().map(|s| (*s).to_owned()).collect()
    }

    fn invoke(
        &self,
        me: Value<'v>,
        args: &Arguments<'v, '_>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        let heap = eval.heap();
        if args.positions(heap)?.next().is_some() {
            return Err(starlark::Error::new_other(anyhow!(
                "{}: unexpected positional arguments",
                self.name
            )));
        }
        let given: Vec<(Value<'v>, Value<'v>)> = args
            .names_map()?
            .iter()
            .map(|(k, v)| (k.to_value(), *v))
            .collect();
        let mut errors = Vec::new();
        let entries = validate_entries(me, &given, "", Some(heap), &mut errors);
        if !errors.is_empty() {
            return Err(starlark::Error::new_other(anyhow!(
                "{}",
                aggregate(&self.name, &errors)
            )));
        }
        Ok(heap.alloc(SchemaDict::new(me, heap.alloc(Dict::new(entries)))))
    }
}

/// The single error text of a failed construction.
pub fn aggregate(name: &str, errors: &[String]) -> String {
    let plural = if errors.len() == 1 { "" } else { "s" };
    let mut text = format!("{name}: {} validation error{plural}:", errors.len());
    for e in errors {
        text.push_str("\n- ");
        text.push_str(e);
    }
    text
}

/// `prefix.key`, or `key` at the top level.
fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_owned()
    } else {
        format!("{prefix}.{key}")
    }
}

/// Validates the `given` entries (in call order) against `schema` (a
/// schema constructor value), with field paths under `prefix`. Errors are
/// appended to `errors`; the returned entries are only meaningful when none
/// were. With a `heap`, validated nested dicts are stored as new schema
/// dicts (construction); without one they are checked only (mutation).
pub fn validate_entries<'v>(
    schema: Value<'v>,
    given: &[(Value<'v>, Value<'v>)],
    prefix: &str,
    heap: Option<Heap<'v>>,
    errors: &mut Vec<String>,
) -> SmallMap<Value<'v>, Value<'v>> {
    let mut out = SmallMap::new();
    let Some(schema) = Schema::from_value(schema) else {
        return out;
    };
    let mut insert = |key: Value<'v>, value: Value<'v>| {
        // Keys reaching here are strings, which always hash.
        if let Ok(key) = key.get_hashed() {
            out.insert_hashed(key, value);
        }
    };
    let mut seen: Vec<&str> = Vec::with_capacity(given.len());
    // Phase 1: the given entries, in call order.
    for &(key, value) in given {
        let Some(name) = key.unpack_str() else {
            // Only a nested plain dict can have one; keyword names are strings.
            errors.push(format!(
                "{prefix}: field names must be strings, got {} ({})",
                go_type(key),
                key.to_repr()
            ));
            continue;
        };
        seen.push(name);
        let path = join(prefix, name);
        let Some((_, descriptor)) = schema.field(name) else {
            errors.push(schema.unknown_field(&path, name));
            continue;
        };
        if value.is_none() {
            if descriptor.is_required() {
                errors.push(format!("{path}: required field missing"));
            } else if let Some(default) = descriptor.default_value() {
                insert(key, default);
            }
            continue;
        }
        if let Some(stored) = check_value(descriptor, &path, value, heap, errors) {
            insert(key, stored);
        }
    }
    // Phase 2: the declared fields not given, in declaration order.
    for (name, key, descriptor) in schema.declared() {
        if seen.contains(&name) {
            continue;
        }
        if descriptor.is_required() {
            errors.push(format!("{}: required field missing", join(prefix, name)));
        } else if let Some(default) = descriptor.default_value() {
            insert(key, default);
        }
    }
    out
}

/// Checks one non-`None` value against its field at `path`. Returns what to
/// store, or `None` after appending the errors found.
pub fn check_value<'v>(
    descriptor: &Field<'v>,
    path: &str,
    value: Value<'v>,
    heap: Option<Heap<'v>>,
    errors: &mut Vec<String>,
) -> Option<Value<'v>> {
    match descriptor.kind() {
        FieldKind::Nested(schema) => {
            let checked = check_nested(schema, path, value, heap, errors);
            if checked.is_none() && !is_mapping_candidate(value) {
                errors.push(format!(
                    "{path}: expected {} or dict, got {}",
                    schema_name(schema),
                    go_type(value)
                ));
            }
            checked
        }
        FieldKind::ListOf(schema) => {
            let Some(list) = ListRef::from_value(value) else {
                errors.push(format!("{path}: expected list, got {}", go_type(value)));
                return None;
            };
            let before = errors.len();
            let mut items = Vec::with_capacity(list.len());
            for (i, item) in list.iter().enumerate() {
                let at = format!("{path}[{i}]");
                match check_nested(schema, &at, item, heap, errors) {
                    Some(v) => items.push(v),
                    None if is_mapping_candidate(item) => {}
                    None => errors.push(format!(
                        "{at}: expected {} or dict, got {}",
                        schema_name(schema),
                        go_type(item)
                    )),
                }
            }
            if errors.len() > before {
                return None;
            }
            Some(heap.map_or(value, |h| h.alloc(AllocList(items))))
        }
        FieldKind::Primitive(ty) => {
            if !type_matches(ty, value) {
                errors.push(format!(
                    "{path}: expected {ty}, got {} ({})",
                    go_type(value),
                    value.to_repr()
                ));
                return None;
            }
            check_enum(descriptor, path, value, errors)
        }
        FieldKind::Any => check_enum(descriptor, path, value, errors),
    }
}

/// A value a nested-schema field validates itself (a schema dict or a plain
/// dict); other values get the "expected S or dict" error from the caller.
fn is_mapping_candidate(value: Value) -> bool {
    is_schema_dict(value) || DictRef::from_value(value).is_some()
}

/// A schema dict as-is, or a plain dict validated against `schema` under
/// `path` (wrapped as a new schema dict when a heap is given). `None` when
/// the value failed or is neither.
fn check_nested<'v>(
    schema: Value<'v>,
    path: &str,
    value: Value<'v>,
    heap: Option<Heap<'v>>,
    errors: &mut Vec<String>,
) -> Option<Value<'v>> {
    if is_schema_dict(value) {
        return Some(value);
    }
    let given: Vec<(Value<'v>, Value<'v>)> = DictRef::from_value(value)?.iter().collect();
    let before = errors.len();
    let entries = validate_entries(schema, &given, path, heap, errors);
    if errors.len() > before {
        return None;
    }
    Some(match heap {
        Some(h) => h.alloc(SchemaDict::new(schema, h.alloc(Dict::new(entries)))),
        None => value,
    })
}

fn check_enum<'v>(
    descriptor: &Field<'v>,
    path: &str,
    value: Value<'v>,
    errors: &mut Vec<String>,
) -> Option<Value<'v>> {
    let allowed = descriptor.enum_values.to_value();
    let Some(list) = ListRef::from_value(allowed) else {
        return Some(value);
    };
    if list.iter().any(|a| a.equals(value).unwrap_or(false)) {
        return Some(value);
    }
    errors.push(format!(
        "{path}: value {} not in enum {}",
        value.to_repr(),
        allowed.to_repr()
    ));
    None
}

/// Whether `value` has the primitive type `ty`.
fn type_matches(ty: &str, value: Value) -> bool {
    match ty {
        "dict" => {
            DictRef::from_value(value).is_some()
                || Entries::of(value).is_some()
                || is_schema_dict(value)
        }
        "string" | "int" | "float" | "bool" | "list" => value.get_type() == ty,
        _ => true,
    }
}

/// Levenshtein distance over bytes.
fn edit_distance(a: &[u8], b: &[u8]) -> usize {
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitute.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

/// The closest declared name to `unknown`, if it is close enough: within
/// max(1, len/3) edits, the earliest declared winning ties.
pub fn suggest<'a>(unknown: &str, names: &[&'a str]) -> Option<&'a str> {
    let threshold = (unknown.len() / 3).max(1);
    let mut best: Option<(usize, &str)> = None;
    for name in names {
        let d = edit_distance(unknown.as_bytes(), name.as_bytes());
        if best.is_none_or(|(b, _)| d < b) {
            best = Some((d, name));
        }
    }
    best.filter(|(d, _)| *d <= threshold).map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_inserts_deletes_and_substitutions() {
        assert_eq!(edit_distance(b"locaiton", b"location"), 2);
        assert_eq!(edit_distance(b"", b"abc"), 3);
        assert_eq!(edit_distance(b"abc", b""), 3);
        assert_eq!(edit_distance(b"kitten", b"sitting"), 3);
        assert_eq!(edit_distance(b"same", b"same"), 0);
    }

    #[test]
    fn suggestions_follow_the_threshold_and_prefer_the_earliest_tie() {
        assert_eq!(suggest("locaiton", &["name", "location"]), Some("location"));
        assert_eq!(suggest("a", &["ab", "cd"]), Some("ab"));
        assert_eq!(suggest("sku", &["sku_name"]), None);
        assert_eq!(suggest("x", &["a", "b"]), Some("a"));
        assert_eq!(suggest("x", &[]), None);
    }
}
