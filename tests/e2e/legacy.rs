//! What only Crossplane 1.x has, on the probe composition (scenarios.rs):
//! claims, and `apiextensions.crossplane.io/v1beta1` Usages that protect
//! through Crossplane's webhook.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cluster::{Cluster, Step, resource_refs, wait_for};
use crate::scenarios::{
    NAMESPACE, annotation, composed, composed_kind, create, delete, expect, is, wait_ready, xr,
};

/// A claim in a namespace gets its cluster-scoped XR, which composes as
/// an XR made directly does; the claim is Ready when the XR is, and
/// deleting it deletes the XR and what it composed.
pub fn a_claim_composes_through_its_xr(cluster: &Cluster) -> Step<String> {
    let start = Instant::now();
    cluster.apply(&format!(
        "apiVersion: e2e.example.org/v1\nkind: Probe\nmetadata:\n  name: claimed\n  namespace: {NAMESPACE}\nspec: {{greeting: claimed}}\n"
    ))?;
    // Beside other reconciles a claim has been seen to learn that its XR
    // is Ready only at its next poll (a minute on 1.x), not when the XR
    // changed, and on a busy machine not at all: Crossplane 1.20 can leave
    // a claim stale with its XR Ready (crossplane/crossplane#6482, open)
    // until something changes the claim. Once the XR has been Ready for
    // 70 s (past a poll), the claim is touched as a user would, once.
    let mut xr_ready_since: Option<Instant> = None;
    let mut nudged = false;
    let claim = wait_for("Probe claimed Ready", Duration::from_mins(3), || {
        let claim = cluster.json(&["get", "probe", "claimed", "-n", NAMESPACE])?;
        let bound = claim["spec"]["resourceRef"]["name"].is_string();
        if is(&claim, "Ready", "True") && bound {
            return Ok(Some(claim));
        }
        let composite = claim["spec"]["resourceRef"]["name"]
            .as_str()
            .and_then(|name| xr(cluster, name).ok());
        let xr_ready = composite.as_ref().is_some_and(|x| is(x, "Ready", "True"));
        let composite = composite.map_or(Value::Null, |x| x["status"]["conditions"].clone());
        if !xr_ready {
            xr_ready_since = None;
        } else if !nudged
            && xr_ready_since.get_or_insert_with(Instant::now).elapsed() > Duration::from_secs(70)
        {
            cluster.kubectl(&[
                "annotate",
                "probe",
                "claimed",
                "-n",
                NAMESPACE,
                "e2e.example.org/nudge=1",
            ])?;
            nudged = true;
        }
        Err(format!(
            "claim conditions {}, its XR's {composite}",
            claim["status"]["conditions"]
        ))
    })?;
    let ready_after = start.elapsed();
    let name = claim["spec"]["resourceRef"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let object = xr(cluster, &name)?;
    expect(
        object["spec"]["claimRef"]["name"] == "claimed",
        "the XR points back at its claim",
        &object["spec"]["claimRef"],
    )?;
    let maps = composed(cluster, &name)?;
    let first = maps.get("first").ok_or("no composed resource first")?;
    expect(
        annotation(first, "greeting") == "claimed",
        "the claim's greeting on first",
        &first["metadata"],
    )?;
    cluster.kubectl(&[
        "delete",
        "probe",
        "claimed",
        "-n",
        NAMESPACE,
        "--wait=true",
        "--timeout=60s",
    ])?;
    wait_for(
        "the claim's XR and what it composed deleted",
        Duration::from_secs(90),
        || {
            let gone = xr(cluster, &name).is_err() && composed(cluster, &name)?.is_empty();
            Ok(gone.then_some(()))
        },
    )?;
    let nudge = if nudged {
        " (touched once, its XR Ready for 70 s: crossplane/crossplane#6482)"
    } else {
        ""
    };
    Ok(format!(
        "claim Ready after {:.1} s{nudge} through XR {name}, {} composed",
        ready_after.as_secs_f64(),
        maps.len()
    ))
}

/// The dependency's Usage is 1.x's own kind, names what it protects and
/// by what, and Crossplane's webhook refuses to delete the protected
/// resource while it is in use; deleting the XR still removes everything.
pub fn v1_usages_protect_what_depends_on_them(cluster: &Cluster) -> Step<String> {
    create(cluster, "protected", "{greeting: hello}")?;
    let object = wait_ready(cluster, "protected", Duration::from_mins(1))?;
    let usage = resource_refs(&object)
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["kind"] == "Usage")
        .cloned()
        .ok_or_else(|| format!("no Usage among {}", resource_refs(&object)))?;
    expect(
        usage["apiVersion"] == "apiextensions.crossplane.io/v1beta1",
        "the Usage is Crossplane 1.x's",
        &usage,
    )?;
    let usage_name = usage["name"].as_str().unwrap_or_default();
    let maps = composed(cluster, "protected")?;
    let name_of = |key: &str| {
        maps.get(key)
            .and_then(|m| m["metadata"]["name"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    let (first, second) = (name_of("first"), name_of("second"));
    // The Usage names both by selector; Crossplane resolves them to names.
    wait_for(
        "the Usage resolved: first used by second",
        Duration::from_mins(1),
        || {
            let usage = cluster.json(&["get", "usages.apiextensions.crossplane.io", usage_name])?;
            let spec = &usage["spec"];
            if spec["of"]["resourceRef"]["name"] == first.as_str()
                && spec["by"]["resourceRef"]["name"] == second.as_str()
            {
                Ok(Some(()))
            } else {
                Err(format!("spec {spec}"))
            }
        },
    )?;
    // The webhook looks only at resources labelled in use, which the
    // Usage controller does once it has resolved the Usage.
    let (_, _, plural) = composed_kind(cluster);
    wait_for(
        "first labelled crossplane.io/in-use",
        Duration::from_mins(1),
        || {
            let object = cluster.json(&["get", plural, &first])?;
            Ok((object["metadata"]["labels"]["crossplane.io/in-use"] == "true").then_some(()))
        },
    )?;
    let refused = match cluster.kubectl(&["delete", plural, &first, "--wait=false"]) {
        Ok(out) => return Err(format!("deleting {first} was allowed: {out}")),
        Err(e) => e,
    };
    expect(
        refused.contains("in-use"),
        "the webhook refuses the delete, naming the Usage",
        &Value::String(refused.clone()),
    )?;
    expect(
        composed(cluster, "protected")?.contains_key("first"),
        "first is still there",
        &Value::Null,
    )?;
    delete(cluster, "protected", &["--wait=true", "--timeout=60s"])?;
    wait_for(
        "the protected resources deleted with their XR",
        Duration::from_secs(90),
        || Ok(composed(cluster, "protected")?.is_empty().then_some(())),
    )?;
    // kubectl's error, from the webhook's name on.
    let reason = refused
        .find("admission webhook")
        .map_or(refused.as_str(), |at| &refused[at..])
        .trim()
        .to_string();
    Ok(format!("Usage {usage_name}; deleting {first}: {reason}"))
}
