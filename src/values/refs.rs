//! `ResourceRef` and `SkippedRef`: what `Resource()` returns, and what
//! `depends_on` takes.

use std::fmt;

use allocative::Allocative;
use starlark::collections::StarlarkHasher;
use starlark::starlark_simple_value;
use starlark::values::{
    Heap, NoSerialize, ProvidesStaticType, StarlarkValue, Value, starlark_value,
};

/// A resource that `Resource()` emitted (or preserved). Truthy.
#[derive(Debug, Clone, ProvidesStaticType, NoSerialize, Allocative)]
pub struct ResourceRef {
    /// The composition resource name.
    pub name: String,
}

/// A resource that `Resource()` skipped. Falsy, so `if ref:` tests emission.
#[derive(Debug, Clone, ProvidesStaticType, NoSerialize, Allocative)]
pub struct SkippedRef {
    /// The composition resource name.
    pub name: String,
    /// `Some` for a skip made with the 0.11.0 keywords, whose `optional=`
    /// it shows as `.optional`: an optional one of those holds no
    /// dependent back, as in 0.11.0. A `When()` skip has no `.optional`
    /// and holds back every dependent.
    pub legacy_optional: Option<bool>,
}

impl SkippedRef {
    /// Whether a `depends_on` naming this skip skips its dependent too.
    pub fn propagates(&self) -> bool {
        self.legacy_optional != Some(true)
    }
}

starlark_simple_value!(ResourceRef);
starlark_simple_value!(SkippedRef);

impl fmt::Display for ResourceRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl fmt::Display for SkippedRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

#[starlark_value(type = "ResourceRef")]
impl<'v> StarlarkValue<'v> for ResourceRef {
    fn write_hash(&self, hasher: &mut StarlarkHasher) -> starlark::Result<()> {
        std::hash::Hash::hash(&self.name, hasher);
        Ok(())
    }

    fn get_attr(&self, attribute: &str, heap: Heap<'v>) -> Option<Value<'v>> {
        (attribute == "name").then(|| heap.alloc(self.name.as_str()))
    }

    fn has_attr(&self, attribute: &str, _heap: Heap<'v>) -> bool {
        attribute == "name"
    }

    fn dir_attr(&self) -> Vec<String> {
        vec!["name".to_owned()]
    }
}

#[starlark_value(type = "SkippedRef")]
impl<'v> StarlarkValue<'v> for SkippedRef {
    fn to_bool(&self) -> bool {
        false
    }

    fn write_hash(&self, hasher: &mut StarlarkHasher) -> starlark::Result<()> {
        std::hash::Hash::hash(&self.name, hasher);
        Ok(())
    }

    fn get_attr(&self, attribute: &str, heap: Heap<'v>) -> Option<Value<'v>> {
        match (attribute, self.legacy_optional) {
            ("name", _) => Some(heap.alloc(self.name.as_str())),
            ("optional", Some(optional)) => Some(Value::new_bool(optional)),
            _ => None,
        }
    }

    fn has_attr(&self, attribute: &str, _heap: Heap<'v>) -> bool {
        attribute == "name" || (attribute == "optional" && self.legacy_optional.is_some())
    }

    fn dir_attr(&self) -> Vec<String> {
        let mut names = vec!["name".to_owned()];
        if self.legacy_optional.is_some() {
            names.push("optional".to_owned());
        }
        names
    }
}
