//! `require_extra_resource(s)`: asking Crossplane to fetch resources.

use std::collections::BTreeMap;

use anyhow::anyhow;
use starlark::environment::GlobalsBuilder;
use starlark::eval::Evaluator;
use starlark::starlark_module;
use starlark::values::Value;
use starlark::values::dict::DictRef;
use starlark::values::none::NoneType;

use crate::builtins::context;
use crate::effects::{Match, Requirement};
use crate::go::types::go_type;

fn labels(fn_name: &str, v: Value) -> anyhow::Result<BTreeMap<String, String>> {
    let dict = DictRef::from_value(v).ok_or_else(|| {
        anyhow!(
            "{fn_name}: for parameter match_labels: got {}, want dict",
            v.get_type()
        )
    })?;
    let mut out = BTreeMap::new();
    for (k, val) in dict.iter() {
        let Some(key) = k.unpack_str() else {
            return Err(anyhow!(
                "{fn_name}: match_labels: key {} ({}) is not a string",
                k.to_repr(),
                k.get_type()
            ));
        };
        let Some(val_str) = val.unpack_str() else {
            return Err(anyhow!(
                "{fn_name}: match_labels: value for key {key:?} ({}) is not a string",
                val.get_type()
            ));
        };
        out.insert(key.to_owned(), val_str.to_owned());
    }
    Ok(out)
}

/// `namespace=`: a string, where an empty one selects in every namespace,
/// as no namespace does.
fn namespace(fn_name: &str, v: Option<Value>) -> anyhow::Result<Option<String>> {
    let Some(v) = v else {
        return Ok(None);
    };
    let ns = v.unpack_str().ok_or_else(|| {
        anyhow!(
            "{fn_name}: for parameter namespace: got {}, want string",
            go_type(v)
        )
    })?;
    Ok((!ns.is_empty()).then(|| ns.to_owned()))
}

#[starlark_module]
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    /// Requests one extra resource, by name or by labels.
    ///
    /// The result arrives on the next call: read it with
    /// `get_extra_resource(name)`. `namespace` selects in one namespace
    /// only (an empty one, as none, in every namespace).
    ///
    /// # Example
    /// ```python
    /// require_extra_resource("my-db", "rds.aws.upbound.io/v1beta1", "Instance", match_name="my-database")
    /// require_extra_resource("settings", "v1", "ConfigMap", match_name="settings", namespace="team-a")
    /// ```
    #[allow(non_snake_case)]
    fn require_extra_resource<'v>(
        name: &str,
        apiVersion: &str,
        kind: &str,
        #[starlark(default = "")] match_name: &str,
        match_labels: Option<Value<'v>>,
        namespace: Option<Value<'v>>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<NoneType> {
        const FN: &str = "require_extra_resource";
        let ctx = context(eval)?;
        let namespace = self::namespace(FN, namespace)?;
        let matching = match (match_name.is_empty(), match_labels) {
            (true, None) => {
                return Err(anyhow!(
                    "{FN}: must specify at least one of match_name or match_labels"
                ));
            }
            (false, given) => {
                if given.is_some() {
                    ctx.effects.requirement_warnings.borrow_mut().push(format!(
                        "{FN}({name:?}): match_name {match_name:?} takes precedence; match_labels ignored"
                    ));
                }
                Match::Name(match_name.to_owned())
            }
            (true, Some(v)) => Match::Labels(labels(FN, v)?),
        };
        ctx.effects.requirements.borrow_mut().insert(
            name.to_owned(),
            Requirement {
                api_version: apiVersion.to_owned(),
                kind: kind.to_owned(),
                matching,
                namespace,
            },
        );
        Ok(NoneType)
    }

    /// Requests every resource of a kind that carries the given labels,
    /// in every namespace or in `namespace` only. Read them with
    /// `get_extra_resources(name)`.
    ///
    /// # Example
    /// ```python
    /// require_extra_resources("subnets", "ec2.aws.upbound.io/v1beta1", "Subnet", match_labels={"net": "main"})
    /// ```
    #[allow(non_snake_case)]
    fn require_extra_resources<'v>(
        name: &str,
        apiVersion: &str,
        kind: &str,
        match_labels: Value<'v>,
        namespace: Option<Value<'v>>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<NoneType> {
        const FN: &str = "require_extra_resources";
        let matching = Match::Labels(labels(FN, match_labels)?);
        let namespace = self::namespace(FN, namespace)?;
        context(eval)?.effects.requirements.borrow_mut().insert(
            name.to_owned(),
            Requirement {
                api_version: apiVersion.to_owned(),
                kind: kind.to_owned(),
                matching,
                namespace,
            },
        );
        Ok(NoneType)
    }
}
