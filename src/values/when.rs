//! `When`: the gate `Resource(..., when=When(...))` takes, saying whether
//! a resource is emitted now and what happens to it when it is not.

use std::fmt;

use allocative::Allocative;
use anyhow::anyhow;
use starlark::collections::StarlarkHasher;
use starlark::starlark_simple_value;
use starlark::values::{
    Heap, NoSerialize, ProvidesStaticType, StarlarkValue, Value, starlark_value,
};

use crate::go::quote::go_quote;

/// A `When(condition, reason, keep_if_exists, optional)` value: immutable,
/// truthy as its condition, unhashable.
#[derive(Debug, Clone, PartialEq, Eq, ProvidesStaticType, NoSerialize, Allocative)]
pub struct When {
    /// Whether the resource is emitted.
    pub condition: bool,
    /// Why it is not, for the skip event and the XR's condition.
    pub reason: String,
    /// When not emitted: re-emit the observed body if there is one.
    pub keep_if_exists: bool,
    /// When not emitted: the skip does not hold the XR's readiness back.
    pub optional: bool,
}

starlark_simple_value!(When);

/// The attribute names, sorted as `dir()` lists them.
const ATTRIBUTES: [&str; 4] = ["condition", "keep_if_exists", "optional", "reason"];

fn bool_text(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

impl fmt::Display for When {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "When({}, {}, keep_if_exists={}, optional={})",
            bool_text(self.condition),
            go_quote(&self.reason),
            bool_text(self.keep_if_exists),
            bool_text(self.optional)
        )
    }
}

#[starlark_value(type = "When")]
impl<'v> StarlarkValue<'v> for When {
    fn collect_repr(&self, collector: &mut String) {
        collector.push_str(&self.to_string());
    }

    fn to_bool(&self) -> bool {
        self.condition
    }

    fn write_hash(&self, _hasher: &mut StarlarkHasher) -> starlark::Result<()> {
        Err(starlark::Error::new_other(anyhow!("unhashable type: When")))
    }

    fn get_attr(&self, attribute: &str, heap: Heap<'v>) -> Option<Value<'v>> {
        Some(match attribute {
            "condition" => Value::new_bool(self.condition),
            "keep_if_exists" => Value::new_bool(self.keep_if_exists),
            "optional" => Value::new_bool(self.optional),
            "reason" => heap.alloc(self.reason.as_str()),
            _ => return None,
        })
    }

    fn has_attr(&self, attribute: &str, _heap: Heap<'v>) -> bool {
        ATTRIBUTES.contains(&attribute)
    }

    fn dir_attr(&self) -> Vec<String> {
        ATTRIBUTES.iter().map(|a| (*a).to_owned()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_when_prints_as_the_go_implementation_prints_it() {
        let w = When {
            condition: false,
            reason: "waiting for \"db\"".to_owned(),
            keep_if_exists: true,
            optional: false,
        };
        assert_eq!(
            w.to_string(),
            r#"When(False, "waiting for \"db\"", keep_if_exists=True, optional=False)"#
        );
    }
}
