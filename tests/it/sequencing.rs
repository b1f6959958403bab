//! A reconcile simulator: run the function, let a fake provider create what
//! it desired (marking each resource Ready and Synced, optionally a round
//! later, and filling `status.atProvider.id`), feed that back as observed
//! state, and repeat until nothing is deferred. Asserts the creation order,
//! the Usages and the XR's readiness at each round.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

/// One reconcile's outcome.
#[derive(Debug)]
struct Round {
    /// Composed resources desired (Usages excluded).
    desired: BTreeSet<String>,
    /// Usage resources desired, as `(of, by)` pairs.
    usages: BTreeSet<(String, String)>,
    /// `desired.composite.ready`.
    ready: String,
    /// The `ComposedResourcesReady` condition's reason, if any.
    gate: Option<String>,
    /// A Fatal result, if any.
    fatal: Option<String>,
    response: Value,
}

/// A fake provider: what exists, and how many rounds until it is ready.
struct Cluster {
    /// name → (body, rounds until Ready)
    resources: BTreeMap<String, (Value, u32)>,
    ready_delay: u32,
}

impl Cluster {
    fn new(ready_delay: u32) -> Self {
        Cluster {
            resources: BTreeMap::new(),
            ready_delay,
        }
    }

    fn observed(&self) -> Value {
        let mut resources = serde_json::Map::new();
        for (name, (body, wait)) in &self.resources {
            let mut body = body.clone();
            if *wait == 0 {
                body["status"] = json!({
                    "atProvider": {"id": format!("{name}-id")},
                    "conditions": [
                        {"type": "Ready", "status": "True"},
                        {"type": "Synced", "status": "True"},
                    ],
                });
            }
            resources.insert(name.clone(), json!({"resource": body}));
        }
        json!({"composite": {"resource": {"metadata": {"name": "xr"}}}, "resources": resources})
    }

    fn reconcile(&mut self, source: &str) -> Round {
        let mut request: function_sdk_rust::proto::v1::RunFunctionRequest =
            serde_json::from_value(json!({"meta": {"tag": "sim"}, "observed": self.observed()}))
                .expect("a request");
        request = common::with_source(request, source);
        let rsp = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
            .block_on(common::function().handle(request));
        let response = common::json(&rsp);
        // The provider ages what exists, then creates what is new.
        for (_, wait) in self.resources.values_mut() {
            *wait = wait.saturating_sub(1);
        }
        let mut desired = BTreeSet::new();
        let mut usages = BTreeSet::new();
        if let Some(resources) = response["desired"]["resources"].as_object() {
            for (name, r) in resources {
                let body = r["resource"].clone();
                if matches!(body["kind"].as_str(), Some("Usage" | "ClusterUsage")) {
                    let label = |side: &str| {
                        body["spec"][side]["resourceSelector"]["matchLabels"]
                            ["function-starlark.crossplane.io/resource-name"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned()
                    };
                    usages.insert((label("of"), label("by")));
                } else {
                    desired.insert(name.clone());
                }
                self.resources
                    .entry(name.clone())
                    .or_insert((body, self.ready_delay));
            }
        }
        let gate = response["conditions"].as_array().and_then(|cs| {
            cs.iter()
                .find(|c| c["type"] == "ComposedResourcesReady")
                .map(|c| c["reason"].as_str().unwrap_or_default().to_owned())
        });
        let fatal = response["results"].as_array().and_then(|rs| {
            rs.iter()
                .find(|r| r["severity"] == "SEVERITY_FATAL")
                .map(|r| r["message"].as_str().unwrap_or_default().to_owned())
        });
        Round {
            desired,
            usages,
            ready: response["desired"]["composite"]["ready"]
                .as_str()
                .unwrap_or("READY_UNSPECIFIED")
                .to_owned(),
            gate,
            fatal,
            response,
        }
    }
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

fn pair(of: &str, by: &str) -> (String, String) {
    (of.to_owned(), by.to_owned())
}

fn body(kind: &str) -> String {
    format!("{{'apiVersion': 'example.org/v1', 'kind': '{kind}'}}")
}

#[test]
fn a_three_level_chain_is_created_one_level_per_round() {
    let source = format!(
        "a = Resource('a', {a})\nb = Resource('b', {b}, depends_on=[a])\nResource('c', {c}, depends_on=[b])\n",
        a = body("A"),
        b = body("B"),
        c = body("C"),
    );
    let mut cluster = Cluster::new(0);
    let expected = [names(&["a"]), names(&["a", "b"]), names(&["a", "b", "c"])];
    for (i, want) in expected.iter().enumerate() {
        let round = cluster.reconcile(&source);
        assert_eq!(&round.desired, want, "round {i}");
        assert_eq!(
            round.usages,
            BTreeSet::from([pair("a", "b"), pair("b", "c")]),
            "round {i}"
        );
        if i < 2 {
            assert_eq!(round.ready, "READY_FALSE", "round {i}");
            assert_eq!(round.gate.as_deref(), Some("WaitingForDependencies"));
            assert_eq!(round.response["meta"]["ttl"], "10s");
        } else {
            assert_eq!(round.ready, "READY_UNSPECIFIED", "round {i}");
            // Converged: a True condition replaces the earlier rounds' False.
            assert_eq!(round.gate.as_deref(), Some("AllReady"));
            assert!(
                round.response["meta"].get("ttl").is_none(),
                "converged: no TTL"
            );
        }
    }
}

#[test]
fn a_diamond_waits_for_both_branches() {
    let source = format!(
        "top = Resource('top', {t})\nleft = Resource('left', {l}, depends_on=[top])\nright = Resource('right', {r}, depends_on=[top])\nResource('bottom', {b}, depends_on=[left, right])\n",
        t = body("T"),
        l = body("L"),
        r = body("R"),
        b = body("B"),
    );
    let mut cluster = Cluster::new(0);
    let rounds: Vec<BTreeSet<String>> =
        (0..3).map(|_| cluster.reconcile(&source).desired).collect();
    assert_eq!(rounds[0], names(&["top"]));
    assert_eq!(rounds[1], names(&["left", "right", "top"]));
    assert_eq!(rounds[2], names(&["bottom", "left", "right", "top"]));
}

#[test]
fn a_slow_provider_keeps_the_dependent_deferred_until_ready() {
    let source = format!(
        "db = Resource('db', {d})\nResource('app', {a}, depends_on=[db])\n",
        d = body("Database"),
        a = body("App"),
    );
    let mut cluster = Cluster::new(2);
    let rounds: Vec<Round> = (0..5).map(|_| cluster.reconcile(&source)).collect();
    let desired: Vec<BTreeSet<String>> = rounds.iter().map(|r| r.desired.clone()).collect();
    assert_eq!(desired[0], names(&["db"]));
    assert_eq!(desired[1], names(&["db"]), "observed but not yet Ready");
    assert_eq!(desired[2], names(&["db"]));
    assert_eq!(desired[3], names(&["app", "db"]));
    let message = rounds[1].response["conditions"][0]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("\"db\" to have Ready=True"), "{message}");
}

#[test]
fn a_field_path_dependency_waits_for_the_field() {
    let source = format!(
        "group = Resource('group', {g})\nResource('member', {m}, depends_on=[(group, 'status.atProvider.id')])\n",
        g = body("Group"),
        m = body("Member"),
    );
    let mut cluster = Cluster::new(1);
    let rounds: Vec<Round> = (0..4).map(|_| cluster.reconcile(&source)).collect();
    assert_eq!(rounds[0].desired, names(&["group"]));
    assert_eq!(
        rounds[1].desired,
        names(&["group"]),
        "the id is not set yet"
    );
    let message = rounds[1].response["conditions"][0]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("field \"status.atProvider.id\" to be ready"),
        "{message}"
    );
    assert_eq!(rounds[2].desired, names(&["group", "member"]));
}

#[test]
fn a_skipped_dependency_skips_its_dependents_even_when_optional() {
    for optional in ["False", "True"] {
        let gated = format!(
            "cache = Resource('cache', {c}, when=When(False, 'not in this tier', keep_if_exists=False, optional={optional}))\nResource('app', {a}, depends_on=[cache])\n",
            c = body("Cache"),
            a = body("App"),
        );
        let mut cluster = Cluster::new(0);
        for _ in 0..2 {
            let round = cluster.reconcile(&gated);
            assert!(round.desired.is_empty());
            assert!(round.usages.is_empty());
            assert_eq!(round.ready, "READY_FALSE");
            assert_eq!(round.gate.as_deref(), Some("PendingConditionalResources"));
        }
    }
}

/// With 0.11.0's keywords an optional skip still holds no dependent back.
#[test]
fn a_legacy_optional_skip_holds_no_dependent_back() {
    let optional = format!(
        "cache = Resource('cache', {c}, when=False, skip_reason='not in this tier', optional=True)\nResource('app', {a}, depends_on=[cache])\n",
        c = body("Cache"),
        a = body("App"),
    );
    let mut cluster = Cluster::new(0);
    let round = cluster.reconcile(&optional);
    assert_eq!(round.desired, names(&["app"]));
    assert!(round.usages.is_empty());
    assert_eq!(round.gate, None);
    assert_eq!(round.ready, "READY_UNSPECIFIED");
}

#[test]
fn a_dependency_cycle_is_fatal_and_names_the_cycle() {
    let source = format!(
        "Resource('a', {a}, depends_on=['b'])\nResource('b', {b}, depends_on=['a'])\n",
        a = body("A"),
        b = body("B"),
    );
    let mut cluster = Cluster::new(0);
    let round = cluster.reconcile(&source);
    let fatal = round.fatal.expect("a cycle is fatal");
    assert!(
        fatal.contains("circular dependency detected: a -> b -> a"),
        "{fatal}"
    );
    assert!(round.desired.is_empty());
}
