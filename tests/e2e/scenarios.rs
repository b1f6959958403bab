//! What a control plane does to a function over time, on a small probe
//! composition of two resources (the second waits for the first's uid):
//! spec changes, a script that starts failing, function processes that
//! die, two replicas, mTLS and a response TTL.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cluster::{
    Cluster, Step, calls_in, condition, function_address, resource_refs, wait_for,
};
use crate::examples::calls_for;

pub const NAMESPACE: &str = "e2e";

/// The probe's XR kind: namespaced on Crossplane v2. On 1.x, where XRs are
/// cluster-scoped and cannot reference namespaced resources, it composes
/// ClusterRoles and has a claim, `Probe`.
fn definition(cluster: &Cluster) -> String {
    let (api, scope) = if cluster.legacy() {
        ("v1", "  claimNames: {kind: Probe, plural: probes}\n")
    } else {
        ("v2", "  scope: Namespaced\n")
    };
    format!(
        r"
apiVersion: apiextensions.crossplane.io/{api}
kind: CompositeResourceDefinition
metadata:
  name: xprobes.e2e.example.org
spec:
  group: e2e.example.org
  names: {{kind: XProbe, plural: xprobes}}
  defaultCompositionRef: {{name: xprobes}}
{scope}  versions:
    - name: v1
      served: true
      referenceable: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                greeting: {{type: string}}
                fail: {{type: boolean}}
                ttl: {{type: string}}
            status:
              type: object
              properties:
                firstUid: {{type: string}}
---
apiVersion: v1
kind: Namespace
metadata:
  name: e2e
"
    )
}

/// What the probe composes: `(apiVersion, kind, plural)`.
pub fn composed_kind(cluster: &Cluster) -> (&'static str, &'static str, &'static str) {
    if cluster.legacy() {
        (
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "clusterroles",
        )
    } else {
        ("v1", "ConfigMap", "configmaps")
    }
}

/// The composition the load test's XRs select: the probe's work, but the
/// second resource is composed unready until the first's uid is observed,
/// where the probe's waits through `depends_on` (the Go implementation
/// 0.11.0 has no `(resource, field)` form, and a plain dependency waits
/// for conditions a ConfigMap never has), and with no response TTL (the
/// probe's `depends_on` clears it): both implementations serve it alike.
pub const PLAIN: &str = "xprobes-plain";

/// Two resources, the second waiting for the first's uid; the greeting and
/// the uid ride on annotations, which both kinds have. On 1.x the
/// dependency's Usage is 1.x's (`usageAPIVersion: v1`), as a user there
/// sets it.
fn compositions(cluster: &Cluster) -> String {
    [
        composition(
            cluster,
            "xprobes",
            r#"depends_on = [(first, "metadata.uid")], ready = True"#,
            "",
        ),
        composition(cluster, PLAIN, "ready = bool(uid)", "0"),
    ]
    .join("---\n")
}

/// The probe's composition `name`: `second` is how the second resource
/// waits for the first, `ttl` the response TTL an XR without `spec.ttl`
/// gets ("" for the function's own choice).
fn composition(cluster: &Cluster, name: &str, second: &str, ttl: &str) -> String {
    let (api, kind, _) = composed_kind(cluster);
    let usages = if cluster.legacy() {
        "\n          usageAPIVersion: v1"
    } else {
        ""
    };
    format!(
        r#"
apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata:
  name: {name}
spec:
  compositeTypeRef: {{apiVersion: e2e.example.org/v1, kind: XProbe}}
  mode: Pipeline
  pipeline:
    - step: probe
      functionRef: {{name: function-starlark}}
      input:
        apiVersion: starlark.fn.crossplane.io/v1alpha1
        kind: StarlarkInput
        spec:{usages}
          source: |
            if get(oxr, "spec.fail", False):
                missing = {{}}["the XR asked this script to fail"]
            greeting = oxr.spec.greeting
            first = Resource("first", {{"apiVersion": "{api}", "kind": "{kind}",
                                       "metadata": {{"annotations": {{"greeting": greeting}}}}}}, ready = True)
            uid = get_observed("first", "metadata.uid", "")
            Resource("second", {{"apiVersion": "{api}", "kind": "{kind}",
                                "metadata": {{"annotations": {{"first": uid}}}}}},
                     {second})
            if uid:
                set_xr_status("firstUid", uid)
            set_condition("Probed", "True", "Composed", "greeting " + greeting)
            emit_event("Normal", "composed " + greeting)
            ttl = get(oxr, "spec.ttl", "{ttl}")
            if ttl:
                set_response_ttl(ttl)
"#
    )
}

/// An annotation the probe's script sets on what it composes.
pub fn annotation<'a>(object: &'a Value, key: &str) -> &'a Value {
    &object["metadata"]["annotations"][key]
}

/// The probe's definitions, once per suite.
pub fn install(cluster: &Cluster) -> Step {
    cluster.apply(&definition(cluster))?;
    wait_for(
        "XRD xprobes.e2e.example.org established",
        Duration::from_mins(1),
        || {
            let object =
                cluster.json(&["get", "customresourcedefinition", "xprobes.e2e.example.org"])?;
            Ok(condition(&object, "Established")
                .is_some_and(|c| c["status"] == "True")
                .then_some(()))
        },
    )?;
    // Established is not yet served: the API server answers for the new
    // kinds a moment later.
    let mut kinds = vec!["xprobes"];
    if cluster.legacy() {
        kinds.push("probes");
    }
    for kind in kinds {
        wait_for(
            &format!("{kind}.e2e.example.org served"),
            Duration::from_mins(1),
            || {
                Ok(cluster
                    .kubectl(&["get", kind, "--all-namespaces"])
                    .ok()
                    .map(|_| ()))
            },
        )?;
    }
    cluster.apply(&compositions(cluster))
}

/// An XProbe's manifest: in the probe's namespace on v2.
pub fn manifest(cluster: &Cluster, name: &str, spec: &str) -> String {
    let namespace = if cluster.legacy() {
        String::new()
    } else {
        format!("\n  namespace: {NAMESPACE}")
    };
    format!(
        "apiVersion: e2e.example.org/v1\nkind: XProbe\nmetadata:\n  name: {name}{namespace}\nspec: {spec}\n"
    )
}

pub fn create(cluster: &Cluster, name: &str, spec: &str) -> Step {
    cluster.apply(&manifest(cluster, name, spec))
}

/// kubectl `args` about XProbes, in the probe's namespace on v2.
pub fn on_xprobes(cluster: &Cluster, args: &[&str]) -> Step<String> {
    let mut all = args.to_vec();
    if !cluster.legacy() {
        all.extend(["-n", NAMESPACE]);
    }
    cluster.kubectl(&all)
}

fn patch(cluster: &Cluster, name: &str, spec: &str) -> Step {
    let body = format!("{{\"spec\": {spec}}}");
    on_xprobes(
        cluster,
        &["patch", "xprobe", name, "--type", "merge", "-p", &body],
    )
    .map(|_| ())
}

/// Deletes every XProbe and waits for them to go.
pub fn delete_all(cluster: &Cluster) -> Step {
    on_xprobes(
        cluster,
        &[
            "delete",
            "xprobes",
            "--all",
            "--wait=true",
            "--timeout=300s",
        ],
    )
    .map(|_| ())
}

pub fn delete(cluster: &Cluster, name: &str, wait: &[&str]) -> Step {
    let mut args = vec!["delete", "xprobe", name];
    args.extend_from_slice(wait);
    on_xprobes(cluster, &args).map(|_| ())
}

pub fn xr(cluster: &Cluster, name: &str) -> Step<Value> {
    let text = on_xprobes(cluster, &["get", "xprobe", name, "-o", "json"])?;
    serde_json::from_str(&text).map_err(|e| format!("XProbe {name}: {e}"))
}

pub fn is(object: &Value, kind: &str, status: &str) -> bool {
    condition(object, kind).is_some_and(|c| c["status"] == status)
}

/// Waits for the XR to be `Ready=True` and `Synced=True` with both
/// resources composed.
pub fn wait_ready(cluster: &Cluster, name: &str, limit: Duration) -> Step<Value> {
    wait_for(&format!("XProbe {name} ready"), limit, || {
        let object = xr(cluster, name)?;
        let refs = resource_refs(&object).as_array().map_or(0, Vec::len);
        // Two resources, and the Usage the dependency brings.
        if is(&object, "Ready", "True") && is(&object, "Synced", "True") && refs >= 2 {
            Ok(Some(object))
        } else {
            Err(format!(
                "{refs} composed, conditions {}",
                object["status"]["conditions"]
            ))
        }
    })
}

/// What the XR `name` composed, by composition resource name.
pub fn composed(cluster: &Cluster, name: &str) -> Step<BTreeMap<String, Value>> {
    let (_, _, plural) = composed_kind(cluster);
    let selector = format!("crossplane.io/composite={name}");
    let mut args = vec!["get", plural, "-l", &selector];
    if !cluster.legacy() {
        args.extend(["-n", NAMESPACE]);
    }
    let list = cluster.json(&args)?;
    Ok(list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| {
            let key = item["metadata"]["annotations"]["crossplane.io/composition-resource-name"]
                .as_str()?;
            Some((key.to_string(), item.clone()))
        })
        .collect())
}

fn uids(cluster: &Cluster, names: &[String]) -> Step<BTreeMap<String, String>> {
    let mut all = BTreeMap::new();
    for name in names {
        for (key, item) in composed(cluster, name)? {
            let uid = item["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            all.insert(format!("{name}/{key}"), uid);
        }
    }
    Ok(all)
}

/// The script's conditions, status, events and fields reach the API
/// server, a changed spec reaches the composed resources, and deleting the
/// XR removes them.
pub fn what_the_script_sets_is_what_the_cluster_holds(cluster: &Cluster) -> Step<String> {
    let start = Instant::now();
    create(cluster, "probe", r"{greeting: hello}")?;
    let object = wait_ready(cluster, "probe", Duration::from_mins(1))?;
    let ready_after = start.elapsed();
    let maps = composed(cluster, "probe")?;
    let first = maps.get("first").ok_or("no composed resource first")?;
    let second = maps.get("second").ok_or("no composed resource second")?;
    let uid = first["metadata"]["uid"].as_str().unwrap_or_default();
    expect(
        annotation(first, "greeting") == "hello",
        "first's greeting annotation",
        &first["metadata"],
    )?;
    expect(
        annotation(second, "first") == uid,
        "second's first annotation is first's uid",
        &second["metadata"],
    )?;
    expect(
        object["status"]["firstUid"] == uid,
        "status.firstUid is first's uid",
        &object["status"],
    )?;
    let probed = condition(&object, "Probed").cloned().unwrap_or_default();
    expect(
        probed["status"] == "True" && probed["message"] == "greeting hello",
        "condition Probed",
        &probed,
    )?;
    expect(
        !is(&object, "ComposedResourcesReady", "False"),
        "no ComposedResourcesReady=False once the dependency is met",
        &object["status"]["conditions"],
    )?;
    wait_for("the script's event", Duration::from_secs(30), || {
        // A cluster-scoped XR's events are in the default namespace.
        let events = cluster.json(&[
            "get",
            "events",
            "--all-namespaces",
            "--field-selector",
            "involvedObject.name=probe",
        ])?;
        let found = events["items"].as_array().into_iter().flatten().any(|e| {
            e["message"]
                .as_str()
                .is_some_and(|m| m.contains("composed hello"))
        });
        Ok(found.then_some(()))
    })?;

    patch(cluster, "probe", r#"{"greeting": "bye"}"#)?;
    wait_for(
        "the changed greeting on first",
        Duration::from_mins(1),
        || {
            let maps = composed(cluster, "probe")?;
            Ok(maps
                .get("first")
                .is_some_and(|m| annotation(m, "greeting") == "bye")
                .then_some(()))
        },
    )?;
    wait_for(
        "condition Probed for the new greeting",
        Duration::from_mins(1),
        || {
            let object = xr(cluster, "probe")?;
            Ok(condition(&object, "Probed")
                .is_some_and(|c| c["message"] == "greeting bye")
                .then_some(()))
        },
    )?;

    delete(cluster, "probe", &["--wait=true", "--timeout=60s"])?;
    wait_for(
        "the composed resources deleted with their XR",
        Duration::from_secs(90),
        || Ok(composed(cluster, "probe")?.is_empty().then_some(())),
    )?;
    Ok(format!("ready after {:.1} s", ready_after.as_secs_f64()))
}

/// A script that starts failing leaves what it composed in place and the
/// XR `Synced=False` with the error and its position; fixed, it recovers.
pub fn a_failing_script_keeps_what_it_composed_and_recovers(cluster: &Cluster) -> Step<String> {
    create(cluster, "failing", r"{greeting: hello}")?;
    wait_ready(cluster, "failing", Duration::from_mins(1))?;
    let before = uids(cluster, &["failing".into()])?;
    patch(cluster, "failing", r#"{"fail": true}"#)?;
    let message = wait_for(
        "XProbe failing Synced=False",
        Duration::from_mins(1),
        || {
            let object = xr(cluster, "failing")?;
            Ok(condition(&object, "Synced")
                .filter(|c| c["status"] == "False")
                .map(|c| c["message"].as_str().unwrap_or_default().to_string()))
        },
    )?;
    expect(
        message.contains("the XR asked this script to fail") && message.contains(":2:"),
        "Synced=False names the error and its line",
        &Value::String(message.clone()),
    )?;
    // A few more reconciles of the failing script: nothing goes.
    std::thread::sleep(Duration::from_secs(5));
    let during = uids(cluster, &["failing".into()])?;
    expect(
        during == before,
        "the composed resources stay while the script fails",
        &serde_json::json!({"before": before, "during": during}),
    )?;
    patch(cluster, "failing", r#"{"fail": false}"#)?;
    wait_ready(cluster, "failing", Duration::from_mins(1))?;
    let after = uids(cluster, &["failing".into()])?;
    expect(
        after == before,
        "the same composed resources after recovery",
        &serde_json::json!({"before": before, "after": after}),
    )?;
    delete(cluster, "failing", &["--wait=false"])?;
    let position = message
        .lines()
        .find(|line| line.contains(":2:"))
        .unwrap_or_default()
        .trim();
    let error = message.lines().last().unwrap_or_default().trim();
    Ok(format!(
        "{} composed resources before, while failing and after recovery, the same uids; Synced=False at {position}: {error}",
        before.len()
    ))
}

/// Two function processes behind the Service's name, as two replicas: both
/// are called; one killed mid-reconcile does not stall the XRs; both
/// killed and restarted, every XR converges and nothing composed is lost.
pub fn replicas_share_calls_and_dying_ones_lose_nothing(cluster: &Cluster) -> Step<String> {
    let pids = cluster.function_pids();
    if pids.len() < 2 {
        return Err(format!("two function processes expected, found {pids:?}"));
    }
    let first: Vec<String> = (0..6).map(|i| format!("replica-{i}")).collect();
    for name in &first {
        create(cluster, name, r"{greeting: hello}")?;
    }
    for name in &first {
        wait_ready(cluster, name, Duration::from_mins(2))?;
    }
    let per_process = cluster.function_logs_by_process();
    let called: Vec<&String> = per_process
        .iter()
        .filter(|(_, log)| first.iter().any(|n| calls_in(log, n) > 0))
        .map(|(process, _)| process)
        .collect();
    expect(
        called.len() >= 2,
        "both replicas received calls",
        &serde_json::json!(called),
    )?;
    // Each XR's dependency is protected by a Usage of its own: Usages
    // named only after the two resources would be one object, owned by the
    // first XR and refused to the others (Synced=False).
    let mut usages = BTreeMap::new();
    for name in &first {
        let object = xr(cluster, name)?;
        for reference in resource_refs(&object)
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["kind"] == "Usage")
        {
            usages.insert(reference["name"].to_string(), name.clone());
        }
    }
    expect(
        usages.len() == first.len(),
        "one Usage per XR, each its own",
        &serde_json::json!(usages),
    )?;
    let before = uids(cluster, &first)?;

    // One replica dies in the middle of new reconciles.
    let second: Vec<String> = (0..6).map(|i| format!("survivor-{i}")).collect();
    for name in &second {
        create(cluster, name, r"{greeting: hello}")?;
    }
    cluster.kill_function(&pids[1].0)?;
    let start = Instant::now();
    for name in &second {
        wait_ready(cluster, name, Duration::from_mins(2))?;
    }
    let one_down = start.elapsed();

    // Both die while XRs change, and come back.
    for name in &first {
        patch(cluster, name, r#"{"greeting": "again"}"#)?;
    }
    for (process, _) in cluster.function_pids() {
        cluster.kill_function(&process)?;
    }
    std::thread::sleep(Duration::from_secs(2));
    cluster.script(&["restart"])?;
    let start = Instant::now();
    for name in &first {
        wait_for(
            &format!("{name} composed again"),
            Duration::from_mins(2),
            || {
                let maps = composed(cluster, name)?;
                let object = xr(cluster, name)?;
                Ok((maps
                    .get("first")
                    .is_some_and(|m| annotation(m, "greeting") == "again")
                    && is(&object, "Ready", "True")
                    && is(&object, "Synced", "True"))
                .then_some(()))
            },
        )?;
    }
    let restarted = start.elapsed();
    let after = uids(cluster, &first)?;
    expect(
        after == before,
        "nothing composed recreated across the kills",
        &serde_json::json!({"before": before, "after": after}),
    )?;
    for name in first.iter().chain(&second) {
        delete(cluster, name, &["--wait=false"])?;
    }
    Ok(format!(
        "both replicas called; 6 XRs ready {:.1} s after one replica was killed; 6 changed XRs converged {:.1} s after both were killed and restarted, with the {} resources they held before, the same uids",
        one_down.as_secs_f64(),
        restarted.as_secs_f64(),
        before.len()
    ))
}

/// A client without Crossplane's certificate gets no answer: the server
/// ends the TLS handshake. Its own certificate is not what is checked here
/// (`-k`), nor is the port closed (curl would say so).
pub fn a_client_without_crossplanes_certificate_is_refused(_: &Cluster) -> Step<String> {
    let address = function_address();
    let out = std::process::Command::new("curl")
        .args(["-sSk", "--http2", "--max-time", "10", "--resolve"])
        .arg(format!("function-starlark.crossplane-system:9443:{address}"))
        .arg("https://function-starlark.crossplane-system:9443/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction")
        .output()
        .map_err(|e| format!("curl: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    expect(
        !out.status.success()
            && !stderr.contains("Could not resolve")
            && !stderr.contains("Failed to connect")
            && !stderr.contains("timed out"),
        "the handshake fails (the port is open)",
        &Value::String(format!("{}: {stderr}", out.status)),
    )?;
    Ok(stderr)
}

/// A response TTL requeues a settled XR; without one a settled XR gets no
/// calls until Crossplane's poll interval.
pub fn a_response_ttl_requeues_and_a_settled_xr_is_left_alone(cluster: &Cluster) -> Step<String> {
    create(cluster, "quick", r#"{greeting: hello, ttl: "5s"}"#)?;
    create(cluster, "quiet", r"{greeting: hello}")?;
    wait_ready(cluster, "quick", Duration::from_mins(1))?;
    wait_ready(cluster, "quiet", Duration::from_mins(1))?;
    // Let the first passes' own requeues pass: the pass that deferred
    // `second` asked to be called again after the sequencing TTL (10 s),
    // and Crossplane 1.x keeps that requeue even after later passes.
    wait_for(
        "XProbe quiet settled: no call for 12 s",
        Duration::from_mins(1),
        || {
            let before = calls_for(cluster, "quiet");
            std::thread::sleep(Duration::from_secs(12));
            Ok((calls_for(cluster, "quiet") == before).then_some(()))
        },
    )?;
    let (quick, quiet) = (calls_for(cluster, "quick"), calls_for(cluster, "quiet"));
    std::thread::sleep(Duration::from_secs(20));
    let quick = calls_for(cluster, "quick") - quick;
    let quiet = calls_for(cluster, "quiet") - quiet;
    // Four requeues, give or take one a busy control plane delays past
    // the window or an event adds; Crossplane's own poll interval is 60 s.
    expect(
        (2..=6).contains(&quick) && quiet == 0,
        "over 20 s: 2-6 calls with a 5 s TTL, none without one",
        &serde_json::json!({"quick": quick, "quiet": quiet}),
    )?;
    for name in ["quick", "quiet"] {
        delete(cluster, name, &["--wait=false"])?;
    }
    Ok(format!(
        "over 20 s: {quick} calls with a 5 s TTL, {quiet} without"
    ))
}

pub fn expect(ok: bool, what: &str, seen: &Value) -> Step {
    if ok {
        Ok(())
    } else {
        Err(format!("{what}: saw {seen}"))
    }
}

pub fn ratio(a: usize, b: usize) -> f64 {
    let whole = |n: usize| f64::from(u32::try_from(n).unwrap_or(u32::MAX));
    whole(a) / whole(b)
}
