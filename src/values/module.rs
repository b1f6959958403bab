//! The `module` value of the Go dialect: what `json`, `crypto`, `encoding`,
//! `dict`, `regex` and `yaml` are. `type()` is `"module"`, `str()` is
//! `<module "NAME">`, `dir()` lists the members sorted, and reading an
//! unknown member is an error. `dict` is also callable, as the universe's
//! `dict()` constructor.

use std::fmt;

use allocative::Allocative;
use anyhow::anyhow;
use starlark::collections::SmallMap;
use starlark::docs::{DocItem, DocModule};
use starlark::environment::{Globals, GlobalsBuilder};
use starlark::eval::{Arguments, Evaluator};
use starlark::starlark_simple_value;
use starlark::values::{
    FrozenValue, Heap, NoSerialize, ProvidesStaticType, StarlarkValue, Value, starlark_value,
};

/// A namespace of builtins.
#[derive(Debug, ProvidesStaticType, NoSerialize, Allocative)]
pub struct ModuleValue {
    name: String,
    #[allocative(skip)]
    members: SmallMap<String, FrozenValue>,
    /// What calling the module does, if it is callable.
    #[allocative(skip)]
    call: Option<FrozenValue>,
}

starlark_simple_value!(ModuleValue);

impl ModuleValue {
    /// The member names, sorted.
    pub fn member_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.members.keys().cloned().collect();
        names.sort();
        names
    }
}

impl fmt::Display for ModuleValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<module {:?}>", self.name)
    }
}

#[starlark_value(type = "module")]
impl<'v> StarlarkValue<'v> for ModuleValue {
    fn get_attr(&self, attribute: &str, _heap: Heap<'v>) -> Option<Value<'v>> {
        self.members.get(attribute).map(|v| v.to_value())
    }

    fn has_attr(&self, attribute: &str, _heap: Heap<'v>) -> bool {
        self.members.contains_key(attribute)
    }

    fn dir_attr(&self) -> Vec<String> {
        self.member_names()
    }

    fn documentation(&self) -> DocItem {
        DocItem::Module(DocModule {
            docs: None,
            members: self
                .member_names()
                .into_iter()
                .filter_map(|name| {
                    let member = self.members.get(&name)?;
                    Some((name, member.to_value().documentation()))
                })
                .collect(),
        })
    }

    fn invoke(
        &self,
        _me: Value<'v>,
        args: &Arguments<'v, '_>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        let Some(call) = self.call else {
            return Err(starlark::Error::new_other(anyhow!(
                "module {:?} is not callable",
                self.name
            )));
        };
        let positional: Vec<Value> = args.positions(eval.heap())?.collect();
        let named: Vec<(String, Value)> = args
            .names_map()?
            .into_iter()
            .map(|(k, v)| (k.as_str().to_owned(), v))
            .collect();
        let named: Vec<(&str, Value)> = named.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        eval.eval_function(call.to_value(), &positional, &named)
    }
}

/// Registers a module named `name` whose members `members` registers, and
/// which, when `callable_as` names a universe builtin, calls it.
pub fn register(
    builder: &mut GlobalsBuilder,
    name: &str,
    members: impl FnOnce(&mut GlobalsBuilder),
    callable_as: Option<&str>,
) {
    let inner = GlobalsBuilder::new().with(members).build();
    builder.frozen_heap().add_reference(inner.heap());
    let call = callable_as.map(|builtin| {
        let standard = Globals::standard();
        builder.frozen_heap().add_reference(standard.heap());
        standard
            .iter()
            .find(|(n, _)| *n == builtin)
            .map(|(_, v)| v)
            .expect("the universe has this builtin")
    });
    let module = ModuleValue {
        name: name.to_owned(),
        members: inner.iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        call,
    };
    let value = builder.alloc(module);
    builder.set(name, value);
}
