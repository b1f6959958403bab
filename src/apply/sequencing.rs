//! Creation sequencing: the `depends_on` edges a run recorded checked,
//! a Usage written for each, and the dependents whose dependencies are not
//! ready yet held back until a later call.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::time::Duration;

use function_sdk_rust::proto::v1::{self as pb, Ready, RunFunctionResponse};
use function_sdk_rust::response;
use pbjson_types::value::Kind;
use pbjson_types::{Struct, Value as PbValue};
use sha2::{Digest, Sha256};

use super::{DependencySettings, duration_from_nanos, set_ttl};
use crate::builtins::resources::RESOURCE_NAME_LABEL;
use crate::effects::{Dependency, DependencyKind, Effects, Emitted};
use crate::error::Error;
use crate::go::duration::parse_go_duration;
use crate::input::UsageApi;
use crate::request::Request;

/// The response TTL while sequencing defers resources, unless the input
/// sets `sequencingTTL`.
const DEFAULT_SEQUENCING_TTL: Duration = Duration::from_secs(10);

/// What creation sequencing decided.
#[derive(Default)]
pub(super) struct Sequencing {
    /// The deferred resources and why each waits.
    pub defers: Vec<(String, String)>,
    /// The warning that names the deferred resources.
    pub event: Option<String>,
    /// The run declared dependencies and none holds anything back.
    pub converged: bool,
}

/// Creation sequencing: checks the declared dependencies, writes a Usage
/// for each, and holds back every resource whose dependencies are not
/// ready yet (asking to be called again after the sequencing TTL).
pub(super) fn sequence(
    rsp: &mut RunFunctionResponse,
    request: &Request,
    effects: &Effects,
    resources: &mut BTreeMap<String, Emitted>,
    settings: &DependencySettings,
) -> Result<Sequencing, Error> {
    let dependencies = effects.dependencies.borrow();
    if dependencies.is_empty() {
        return Ok(Sequencing::default());
    }
    check_dependencies(rsp, &dependencies, resources)?;
    let usage_kind = UsageKind::of(settings.usage_api, request);
    emit_usages(rsp, &dependencies, resources, usage_kind);
    let ttl = sequencing_ttl(settings.sequencing_ttl)?;
    let sequencing = defer_unready(request, &dependencies, resources);
    set_ttl(rsp, (!sequencing.defers.is_empty()).then_some(ttl));
    Ok(sequencing)
}

/// Refuses a `depends_on` naming a resource value this script did not
/// create and a dependency cycle; warns of a name that matches nothing.
fn check_dependencies(
    rsp: &mut RunFunctionResponse,
    dependencies: &[Dependency],
    resources: &BTreeMap<String, Emitted>,
) -> Result<(), Error> {
    let known: BTreeSet<&str> = resources.keys().map(String::as_str).collect();
    // Only a message needs the list, and most runs have none.
    let available = || {
        known
            .iter()
            .map(|n| format!("{n:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for d in dependencies {
        if d.kind == DependencyKind::Ref && !known.contains(d.dependency.as_str()) {
            let available = available();
            return Err(Error::Dependency(format!(
                "Resource({:?}): depends_on references {:?} which was not created by this script; available resources: [{available}]",
                d.dependent, d.dependency
            )));
        }
    }
    let edges: Vec<(&str, &str)> = dependencies
        .iter()
        .map(|d| (d.dependent.as_str(), d.dependency.as_str()))
        .collect();
    if let Some(cycle) = find_cycle(&edges) {
        return Err(Error::Dependency(format!(
            "circular dependency detected: {}",
            cycle.join(" -> ")
        )));
    }
    for d in dependencies {
        if d.kind == DependencyKind::Name && !known.contains(d.dependency.as_str()) {
            let available = available();
            response::warning(
                rsp,
                format!(
                    "depends_on: {:?} (string ref in Resource({:?})) does not match any resource created by this script; available resources: [{available}]",
                    d.dependency, d.dependent
                ),
            );
        }
    }
    Ok(())
}

/// One ready Usage per distinct dependency edge, protecting the dependency
/// from deletion while its dependent exists.
fn emit_usages(
    rsp: &mut RunFunctionResponse,
    dependencies: &[Dependency],
    resources: &BTreeMap<String, Emitted>,
    kind: UsageKind,
) {
    let mut seen = BTreeSet::new();
    for d in dependencies {
        if !seen.insert((d.dependent.as_str(), d.dependency.as_str())) {
            continue;
        }
        let (name, body) = usage(kind, &d.dependent, &d.dependency, resources);
        *response::desired_composed(rsp, name) = pb::Resource {
            resource: Some(body),
            connection_details: HashMap::new(),
            ready: Ready::True as i32,
        };
    }
}

/// `spec.sequencingTTL`, or the default when it is not given.
fn sequencing_ttl(raw: Option<&str>) -> Result<Duration, Error> {
    let Some(raw) = raw else {
        return Ok(DEFAULT_SEQUENCING_TTL);
    };
    parse_go_duration(raw)
        .map(duration_from_nanos)
        .map_err(|e| Error::SequencingTtl {
            value: raw.to_owned(),
            detail: e.to_string(),
        })
}

/// Removes from `resources` every dependent that is not observed yet and
/// whose dependencies are not ready, with the reasons it waits.
fn defer_unready(
    request: &Request,
    dependencies: &[Dependency],
    resources: &mut BTreeMap<String, Emitted>,
) -> Sequencing {
    let observed = request.observed.as_ref().map(|o| &o.resources);
    let mut waiting: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for d in dependencies {
        let reasons = unmet(request, &d.dependency, d.field_path.as_deref());
        if !reasons.is_empty() {
            waiting
                .entry(d.dependent.as_str())
                .or_default()
                .extend(reasons);
        }
    }
    let deferred: Vec<(&str, Vec<String>)> = waiting
        .into_iter()
        .filter(|(dependent, _)| !observed.is_some_and(|o| o.contains_key(*dependent)))
        .collect();
    if deferred.is_empty() {
        return Sequencing {
            converged: true,
            ..Sequencing::default()
        };
    }
    let mut defers = Vec::with_capacity(deferred.len());
    for (name, reasons) in &deferred {
        resources.remove(*name);
        defers.push(((*name).to_owned(), reasons.join("; ")));
    }
    let names: Vec<&str> = deferred.iter().map(|(n, _)| *n).collect();
    Sequencing {
        defers,
        event: Some(format!(
            "Creation sequencing: {} resource(s) deferred: {}",
            names.len(),
            names.join(", ")
        )),
        converged: false,
    }
}

/// The first cycle among `edges` (dependent → dependency): depth-first from
/// each node in sorted order, neighbours in recording order, reported from
/// the node the back edge points to back to itself.
fn find_cycle<'a>(edges: &[(&'a str, &'a str)]) -> Option<Vec<&'a str>> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        New,
        OnStack,
        Done,
    }
    fn visit<'a>(
        node: &'a str,
        adjacency: &BTreeMap<&'a str, Vec<&'a str>>,
        state: &mut HashMap<&'a str, State>,
        stack: &mut Vec<&'a str>,
    ) -> Option<Vec<&'a str>> {
        state.insert(node, State::OnStack);
        stack.push(node);
        for next in &adjacency[node] {
            match state[next] {
                State::OnStack => {
                    let start = stack.iter().position(|n| n == next).expect("on the stack");
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(next);
                    return Some(cycle);
                }
                State::New => {
                    if let Some(cycle) = visit(next, adjacency, state, stack) {
                        return Some(cycle);
                    }
                }
                State::Done => {}
            }
        }
        stack.pop();
        state.insert(node, State::Done);
        None
    }
    let mut adjacency: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in edges {
        adjacency.entry(from).or_default().push(to);
        adjacency.entry(to).or_default();
    }
    let mut state: HashMap<&str, State> = adjacency.keys().map(|k| (*k, State::New)).collect();
    let nodes: Vec<&str> = adjacency.keys().copied().collect();
    for node in nodes {
        if state[node] == State::New {
            let mut stack = Vec::new();
            if let Some(cycle) = visit(node, &adjacency, &mut state, &mut stack) {
                return Some(cycle);
            }
        }
    }
    None
}

/// Why `dependency` is not met yet (empty when it is).
fn unmet(request: &Request, dependency: &str, field_path: Option<&str>) -> Vec<String> {
    let Some(body) = request.observed_struct(dependency) else {
        return vec![format!("{dependency:?} to be observed")];
    };
    if let Some(path) = field_path {
        return if truthy_at(&body, path) {
            Vec::new()
        } else {
            vec![format!("{dependency:?} field {path:?} to be ready")]
        };
    }
    if let Some(all_true) = nested_conditions_true(&body) {
        return if all_true {
            Vec::new()
        } else {
            vec![format!(
                "{dependency:?} nested resource conditions not all True"
            )]
        };
    }
    let mut reasons = Vec::new();
    for kind in ["Ready", "Synced"] {
        if !condition_true(&body, kind) {
            reasons.push(format!("{dependency:?} to have {kind}=True"));
        }
    }
    reasons
}

/// For a provider-kubernetes `Object`, which is ready as soon as it has
/// applied its manifest, whether every condition of the object it manages
/// is `True`; `None` for any other kind, or while that object reports no
/// conditions (then the `Object`'s own conditions decide).
fn nested_conditions_true(body: &Struct) -> Option<bool> {
    let is_object = matches!(struct_field(body, "apiVersion"), Some(Kind::StringValue(v)) if v.contains("kubernetes.crossplane.io/"))
        && matches!(struct_field(body, "kind"), Some(Kind::StringValue(k)) if k == "Object");
    if !is_object {
        return None;
    }
    let path = ["status", "atProvider", "manifest", "status", "conditions"];
    let Some(Kind::ListValue(conditions)) = crate::convert::kind_at(body, &path) else {
        return None;
    };
    if conditions.values.is_empty() {
        return None;
    }
    Some(conditions.values.iter().all(|c| match &c.kind {
        Some(Kind::StructValue(c)) => {
            matches!(struct_field(c, "status"), Some(Kind::StringValue(s)) if s == "True")
        }
        _ => false,
    }))
}

fn struct_field<'a>(s: &'a Struct, key: &str) -> Option<&'a Kind> {
    s.fields.get(key)?.kind.as_ref()
}

fn condition_true(body: &Struct, kind: &str) -> bool {
    let Some(Kind::StructValue(status)) = struct_field(body, "status") else {
        return false;
    };
    let Some(Kind::ListValue(conditions)) = struct_field(status, "conditions") else {
        return false;
    };
    conditions.values.iter().any(|c| match &c.kind {
        Some(Kind::StructValue(c)) => {
            matches!(struct_field(c, "type"), Some(Kind::StringValue(t)) if t == kind)
                && matches!(struct_field(c, "status"), Some(Kind::StringValue(s)) if s == "True")
        }
        _ => false,
    })
}

fn truthy_at(body: &Struct, path: &str) -> bool {
    let segments: Vec<&str> = path.split('.').collect();
    match crate::convert::kind_at(body, &segments) {
        None | Some(Kind::NullValue(_)) => false,
        Some(Kind::StringValue(s)) => !s.is_empty(),
        Some(Kind::NumberValue(n)) => *n != 0.0,
        Some(Kind::BoolValue(b)) => *b,
        Some(Kind::StructValue(_) | Kind::ListValue(_)) => true,
    }
}

/// The apiVersion and kind of the Usages a run writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct UsageKind {
    api_version: &'static str,
    kind: &'static str,
}

impl UsageKind {
    /// Crossplane 2's Usage is namespaced: a cluster-scoped composite's
    /// composed resources are protected by a `ClusterUsage`. Crossplane
    /// 1's has one kind.
    fn of(api: UsageApi, request: &Request) -> Self {
        let kind = match api {
            UsageApi::V2 if request.composite_head().namespace.is_empty() => "ClusterUsage",
            UsageApi::V1 | UsageApi::V2 => "Usage",
        };
        UsageKind {
            api_version: api.api_version(),
            kind,
        }
    }
}

/// The Usage that protects `dependency` while `dependent` exists. It has
/// no `metadata`: Crossplane names it after the composite, as it names
/// every composed resource, so that Usages of two composites never share
/// a name.
fn usage(
    kind: UsageKind,
    dependent: &str,
    dependency: &str,
    resources: &BTreeMap<String, crate::effects::Emitted>,
) -> (String, Struct) {
    let digest = Sha256::digest(format!("{dependent}\0{dependency}").as_bytes());
    let mut name = String::from("usage-");
    for b in digest.iter().take(4) {
        let _ = write!(name, "{b:02x}");
    }
    let selector = |who: &str| {
        let mut fields = Vec::new();
        if let Some(r) = resources.get(who) {
            let body = r.body.to_struct();
            for key in ["apiVersion", "kind"] {
                let value = match struct_field(&body, key) {
                    Some(Kind::StringValue(s)) => s.clone(),
                    _ => String::new(),
                };
                fields.push((key, json_str(&value)));
            }
        }
        fields.push((
            "resourceSelector",
            object(vec![
                (
                    "matchControllerRef",
                    PbValue {
                        kind: Some(Kind::BoolValue(true)),
                    },
                ),
                (
                    "matchLabels",
                    object(vec![(RESOURCE_NAME_LABEL, json_str(who))]),
                ),
            ]),
        ));
        object(fields)
    };
    let body = Struct {
        fields: [
            ("apiVersion", json_str(kind.api_version)),
            ("kind", json_str(kind.kind)),
            (
                "spec",
                object(vec![
                    (
                        "replayDeletion",
                        PbValue {
                            kind: Some(Kind::BoolValue(true)),
                        },
                    ),
                    ("of", selector(dependency)),
                    ("by", selector(dependent)),
                ]),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect(),
    };
    (name, body)
}

fn json_str(s: &str) -> PbValue {
    PbValue {
        kind: Some(Kind::StringValue(s.to_owned())),
    }
}

fn object(fields: Vec<(&str, PbValue)>) -> PbValue {
    PbValue {
        kind: Some(Kind::StructValue(Struct {
            fields: fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_names_match_the_reference_vectors() {
        let empty = BTreeMap::new();
        for (dependent, dependency, want) in [
            ("app", "db", "usage-c2727553"),
            ("app", "external-vpc", "usage-76593d19"),
            ("db", "cache", "usage-543cc3c8"),
            ("notification-topic", "bucket-0", "usage-e8072ae8"),
        ] {
            let kind = UsageKind {
                api_version: UsageApi::V2.api_version(),
                kind: "Usage",
            };
            assert_eq!(usage(kind, dependent, dependency, &empty).0, want);
        }
    }

    #[test]
    fn cycles_are_reported_from_the_node_the_back_edge_reaches() {
        assert_eq!(
            find_cycle(&[("a", "b"), ("b", "a")]),
            Some(vec!["a", "b", "a"])
        );
        assert_eq!(
            find_cycle(&[("a", "b"), ("b", "c"), ("c", "b")]),
            Some(vec!["b", "c", "b"])
        );
        assert_eq!(find_cycle(&[("a", "a")]), Some(vec!["a", "a"]));
        assert_eq!(find_cycle(&[("a", "b"), ("b", "c"), ("a", "c")]), None);
    }
}
