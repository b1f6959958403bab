//! `spec.validateSchemas`: the function requires the schema of every kind
//! it composes (Crossplane's required-schemas capability) and, once
//! Crossplane sends them, validates each composed resource against the
//! schema of its kind, reporting each problem as a Warning result. Where
//! Crossplane does not advertise the capability, one Warning says so.

use function_sdk_rust::proto::v1::{
    Capability, RunFunctionRequest, RunFunctionResponse, SchemaSelector,
};
use function_sdk_rust::response;

/// The requirement name of a kind's schema.
fn requirement(api_version: &str, kind: &str) -> String {
    format!("schema/{api_version}/{kind}")
}

fn json(s: Option<&pbjson_types::Struct>) -> serde_json::Value {
    s.and_then(|s| serde_json::to_value(s).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// Requires the composed kinds' schemas and warns of what does not fit
/// the ones Crossplane sent.
pub fn validate(rsp: &mut RunFunctionResponse, request: &RunFunctionRequest) {
    let advertised = request.meta.as_ref().is_some_and(|m| {
        m.capabilities
            .contains(&(Capability::RequiredSchemas as i32))
    });
    if !advertised {
        response::warning(
            rsp,
            "validateSchemas: Crossplane does not advertise the required-schemas capability, so composed resources were not validated".to_owned(),
        );
        return;
    }
    let mut names: Vec<String> = rsp
        .desired
        .as_ref()
        .map(|d| d.resources.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    let mut warnings = Vec::new();
    let mut selectors = Vec::new();
    for name in names {
        let body = json(
            rsp.desired
                .as_ref()
                .and_then(|d| d.resources.get(&name))
                .and_then(|r| r.resource.as_ref()),
        );
        let field = |key: &str| {
            body.get(key)
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let (api_version, kind) = (field("apiVersion"), field("kind"));
        if api_version.is_empty() || kind.is_empty() {
            continue;
        }
        let key = requirement(&api_version, &kind);
        if let Some(schema) = request
            .required_schemas
            .get(&key)
            .and_then(|s| s.openapi_v3.as_ref())
        {
            for (path, problem) in crate::openapi::validate(&body, &json(Some(schema))) {
                warnings.push(format!(
                    "validateSchemas: Resource {name:?} ({kind}): {path}: {problem}"
                ));
            }
        }
        selectors.push((key, SchemaSelector { api_version, kind }));
    }
    let requirements = rsp.requirements.get_or_insert_with(Default::default);
    for (key, selector) in selectors {
        requirements.schemas.insert(key, selector);
    }
    for w in warnings {
        response::warning(rsp, w);
    }
}
