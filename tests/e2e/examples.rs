//! Every example under examples/ whose kinds can exist here, reconciled by
//! the live control plane until its XR is synced with everything it
//! composes, then deleted.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_yaml::Value as Yaml;

use crate::cluster::{Cluster, Step, calls_in, condition, resource_of, resource_refs, wait_for};
use crate::provider::Provider;

/// What it took one example to converge.
pub struct Converged {
    pub calls: usize,
    pub wall: Duration,
}

/// Examples whose scripts mark every composed resource ready, so their XR
/// must reach `Ready=True`. Crossplane v2 counts a composed resource ready
/// only when the pipeline says so; the other examples leave `ready=None`
/// for a later step (function-auto-ready, in most clusters).
const READY: &[&str] = &["kubernetes-app"];

/// Examples Crossplane 1.x cannot run, and why. An example with a v2
/// definition must be named here, so none runs or is skipped by accident.
const V2_ONLY: &[(&str, &str)] = &[
    (
        "tenant-namespace",
        "it composes namespaced resources, which a 1.x XR cannot reference (its resourceRefs have no namespace)",
    ),
    (
        "kubernetes-app",
        "its XR is namespaced (an apiextensions.crossplane.io/v2 XRD)",
    ),
    (
        "tenant-quota",
        "its XR is namespaced (an apiextensions.crossplane.io/v2 XRD)",
    ),
];

/// Why `cluster` skips the example in `dir`, if it does.
pub fn skipped_on(cluster: &Cluster, dir: &Path) -> Step<Option<&'static str>> {
    let name = dir.file_name().unwrap().to_string_lossy();
    let listed = V2_ONLY
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, why)| *why);
    let v2 = definitions(dir)?.iter().any(|(_, object)| {
        object["kind"] == "CompositeResourceDefinition"
            && object["apiVersion"] == "apiextensions.crossplane.io/v2"
    });
    match (v2, listed) {
        (true, None) => Err(format!(
            "{name} has a v2 XRD: name it in V2_ONLY with why 1.x cannot run it"
        )),
        (_, why) if cluster.legacy() => Ok(why),
        _ => Ok(None),
    }
}

/// The Composition as a Crossplane 1.x user writes it: the function's
/// Usages in 1.x's API (`usageAPIVersion: v1` on each StarlarkInput).
fn for_crossplane_1(composition: &str) -> Step<String> {
    let mut object: Yaml = serde_yaml::from_str(composition).map_err(|e| e.to_string())?;
    for step in object["spec"]["pipeline"]
        .as_sequence_mut()
        .into_iter()
        .flatten()
    {
        if step["input"]["kind"] == "StarlarkInput"
            && let Some(spec) = step["input"]["spec"].as_mapping_mut()
        {
            spec.insert("usageAPIVersion".into(), "v1".into());
        }
    }
    serde_yaml::to_string(&object).map_err(|e| e.to_string())
}

/// Applies the example's definitions, composition and XR, lets the
/// stand-in provider mark its managed resources ready, and waits for the XR
/// to settle: `Synced=True`, no `ComposedResourcesReady=False` left (its
/// sequencing converged), every composed resource on the API server and
/// the same set a few seconds later, and `Ready=True` for the examples in
/// [`READY`]. Then deletes the XR and waits for its resources to go.
pub fn converge(cluster: &'static Cluster, provider: &Provider, dir: &Path) -> Step<Converged> {
    let result = settle_and_delete(cluster, provider, dir);
    // Examples share XR kinds: a composition left behind would be picked
    // for the next example's XR of the same kind.
    for file in ["xr.yaml", "composition.yaml"] {
        let path = dir.join(file);
        let path = path.to_string_lossy();
        let _ = cluster.kubectl(&["delete", "-f", &path, "--ignore-not-found", "--wait=false"]);
    }
    result
}

fn settle_and_delete(
    cluster: &'static Cluster,
    provider: &Provider,
    dir: &Path,
) -> Step<Converged> {
    let example = dir.file_name().unwrap().to_string_lossy().into_owned();
    install_definitions(cluster, dir)?;
    let mut composition = read(&dir.join("composition.yaml"))?;
    if cluster.legacy() {
        composition = for_crossplane_1(&composition)?;
    }
    cluster.apply(&composition)?;
    let required = dir.join("required-resources.yaml");
    if required.exists() {
        apply_with_status(cluster, &read(&required)?)?;
    }
    let xr_text = read(&dir.join("xr.yaml"))?;
    let xr: Yaml = serde_yaml::from_str(&xr_text).map_err(|e| format!("{example}/xr.yaml: {e}"))?;
    let kind = resource_name(&xr)?;
    let name = xr["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let namespace = xr["metadata"]["namespace"].as_str().map(str::to_string);
    let mut xr_args = vec!["get".to_string(), kind.clone(), name.clone()];
    if let Some(namespace) = &namespace {
        cluster.apply(&format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}\n"
        ))?;
        xr_args.extend(["-n".to_string(), namespace.clone()]);
    }
    let xr_args: Vec<&str> = xr_args.iter().map(String::as_str).collect();
    let must_be_ready = READY.contains(&example.as_str());

    let calls_before = calls_for(cluster, &name);
    provider.report(&name, reported(dir)?);
    let start = Instant::now();
    cluster.apply(&xr_text)?;
    // The API server serves a changed CRD's schema a moment after the CRD
    // says so; an XR stored before then lost the fields the old one
    // lacked. Apply again until it keeps them all.
    let wanted: Vec<String> = xr["spec"]
        .as_mapping()
        .map(|m| {
            m.keys()
                .filter_map(|k| k.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    wait_for(
        &format!("{example}: {kind}/{name} stored with its whole spec"),
        Duration::from_secs(30),
        || {
            let object = cluster.json(&xr_args)?;
            if wanted.iter().all(|k| !object["spec"][k.as_str()].is_null()) {
                return Ok(Some(()));
            }
            cluster.apply(&xr_text)?;
            Ok(None)
        },
    )?;
    let mut settled: Option<(String, Instant)> = None;
    let object = wait_for(
        &format!("{example}: {kind}/{name} settled"),
        Duration::from_mins(2),
        || {
            let object = cluster.json(&xr_args)?;
            let synced = condition(&object, "Synced").is_some_and(|c| c["status"] == "True");
            let waiting = condition(&object, "ComposedResourcesReady")
                .is_some_and(|c| c["status"] == "False");
            let ready = condition(&object, "Ready").is_some_and(|c| c["status"] == "True");
            let refs = resource_refs(&object).to_string();
            let composed = resource_refs(&object)
                .as_array()
                .is_some_and(|refs| !refs.is_empty());
            if !(synced && composed && !waiting && (ready || !must_be_ready)) {
                settled = None;
                return Err(format!("conditions {}", object["status"]["conditions"]));
            }
            // The same composed resources three seconds on: a pass that
            // adds more would have shown by then.
            match &settled {
                Some((before, since)) if *before == refs => {
                    if since.elapsed() >= Duration::from_secs(3) {
                        return Ok(Some(object));
                    }
                }
                _ => settled = Some((refs, Instant::now())),
            }
            Ok(None)
        },
    )?;
    let wall = settled.map_or_else(|| start.elapsed(), |(_, since)| since - start);
    let refs = resource_refs(&object)
        .as_array()
        .cloned()
        .unwrap_or_default();
    for reference in &refs {
        get_composed(cluster, reference, namespace.as_deref(), &[])
            .map_err(|e| format!("{example}: composed {} is missing: {e}", reference["name"]))?;
    }
    let calls = calls_for(cluster, &name) - calls_before;

    let mut delete = vec!["delete", &kind, &name, "--wait=true", "--timeout=60s"];
    if let Some(namespace) = &namespace {
        delete.extend(["-n", namespace]);
    }
    cluster.kubectl(&delete)?;
    for reference in &refs {
        let name = reference["name"].as_str().unwrap_or_default();
        let kind = reference["kind"].as_str().unwrap_or_default();
        wait_for(
            &format!("{example}: {kind}/{name} deleted with its XR"),
            Duration::from_secs(90),
            || {
                let left = get_composed(
                    cluster,
                    reference,
                    namespace.as_deref(),
                    &["--ignore-not-found", "-o", "name"],
                )?;
                Ok(left.trim().is_empty().then_some(()))
            },
        )?;
    }
    Ok(Converged { calls, wall })
}

/// `kubectl get` of a resource an XR references, with `extra` arguments;
/// a reference without a namespace is in the XR's, if the kind has one.
fn get_composed(
    cluster: &Cluster,
    reference: &serde_json::Value,
    xr_namespace: Option<&str>,
    extra: &[&str],
) -> Step<String> {
    let resource = resource_of(
        reference["apiVersion"].as_str().unwrap_or_default(),
        reference["kind"].as_str().unwrap_or_default(),
    );
    let name = reference["name"].as_str().unwrap_or_default();
    let mut args = vec!["get", resource.as_str(), name];
    args.extend_from_slice(extra);
    let namespace = reference["namespace"]
        .as_str()
        .or(xr_namespace)
        .unwrap_or_default();
    if !namespace.is_empty() {
        args.extend(["-n", namespace]);
    }
    cluster.kubectl(&args)
}

/// Installs the CRDs of every example's managed kinds up front, once, and
/// returns their names (`plural.group`) for the stand-in provider. The
/// garbage collector that deletes what an XR composed learns of new kinds
/// every 30 s; kinds it already knows are deleted with their XR at once.
/// Examples that type one kind differently (each the fields it uses) get
/// the union of their schemas, so they can run side by side.
pub fn preinstall(cluster: &Cluster, dirs: &[PathBuf]) -> Step<Vec<String>> {
    let mut crds: Vec<(String, Yaml)> = Vec::new();
    for dir in dirs {
        for (name, object) in definitions(dir)? {
            let group = name.split_once('.').map_or("", |(_, group)| group);
            if object["kind"] != "CustomResourceDefinition" || CROSSPLANES.contains(&group) {
                continue;
            }
            match crds.iter_mut().find(|(known, _)| *known == name) {
                Some((_, crd)) => merge_versions(crd, &object),
                None => crds.push((name, object)),
            }
        }
    }
    for (_, crd) in &mut crds {
        with_status(crd);
        cluster.apply(&serde_yaml::to_string(crd).map_err(|e| e.to_string())?)?;
    }
    for (name, _) in &crds {
        wait_established(cluster, name)?;
    }
    Ok(crds.into_iter().map(|(name, _)| name).collect())
}

/// Widens `crd`'s schema of each version by what `other` declares for it.
fn merge_versions(crd: &mut Yaml, other: &Yaml) {
    let Some(versions) = crd["spec"]["versions"].as_sequence_mut() else {
        return;
    };
    for version in versions {
        let theirs = other["spec"]["versions"]
            .as_sequence()
            .into_iter()
            .flatten()
            .find(|v| v["name"] == version["name"]);
        if let Some(theirs) = theirs {
            merge_schema(
                &mut version["schema"]["openAPIV3Schema"],
                &theirs["schema"]["openAPIV3Schema"],
            );
        }
    }
}

/// The union of two object schemas: every property either declares, a
/// property both declare merged the same way, and only the fields both
/// require.
fn merge_schema(ours: &mut Yaml, theirs: &Yaml) {
    if let (Some(mine), Some(other)) = (
        ours["properties"].as_mapping_mut(),
        theirs["properties"].as_mapping(),
    ) {
        for (key, schema) in other {
            match mine.get_mut(key) {
                Some(existing) => merge_schema(existing, schema),
                None => {
                    mine.insert(key.clone(), schema.clone());
                }
            }
        }
    } else if ours["properties"].is_null() && theirs["properties"].is_mapping() {
        ours["properties"] = theirs["properties"].clone();
    }
    if let Some(required) = ours["required"].as_sequence_mut() {
        let theirs = theirs["required"]
            .as_sequence()
            .cloned()
            .unwrap_or_default();
        required.retain(|field| theirs.contains(field));
    }
}

/// Examples that would touch each other's objects, so one waits for the
/// other to finish: they define the same XR kind, their XRs share a name,
/// or one's XR lives in a namespace named as the other's XR (which may
/// compose it). Every other example runs beside them.
pub fn groups(dirs: &[PathBuf]) -> Step<Vec<Vec<PathBuf>>> {
    let mut groups: Vec<(Vec<String>, Vec<PathBuf>)> = Vec::new();
    for dir in dirs {
        let mut keys: Vec<String> = definitions(dir)?
            .into_iter()
            .filter(|(_, object)| object["kind"] == "CompositeResourceDefinition")
            .map(|(name, _)| name)
            .collect();
        let xr: Yaml = serde_yaml::from_str(&read(&dir.join("xr.yaml"))?)
            .map_err(|e| format!("{}: {e}", dir.join("xr.yaml").display()))?;
        for field in ["name", "namespace"] {
            if let Some(value) = xr["metadata"][field].as_str() {
                keys.push(format!("xr {value}"));
            }
        }
        let (mut joined, rest): (Vec<_>, Vec<_>) = groups
            .into_iter()
            .partition(|(theirs, _)| theirs.iter().any(|key| keys.contains(key)));
        groups = rest;
        let mut merged = (keys, Vec::new());
        for (keys, dirs) in joined.drain(..) {
            merged.0.extend(keys);
            merged.1.extend(dirs);
        }
        merged.1.push(dir.clone());
        groups.push(merged);
    }
    Ok(groups.into_iter().map(|(_, dirs)| dirs).collect())
}

/// The documents of an example's `crds/`, with their names.
fn definitions(dir: &Path) -> Step<Vec<(String, Yaml)>> {
    let mut all = Vec::new();
    for path in yaml_files(&dir.join("crds"))? {
        for document in serde_yaml::Deserializer::from_str(&read(&path)?) {
            let object =
                Yaml::deserialize(document).map_err(|e| format!("{}: {e}", path.display()))?;
            let name = object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            all.push((name, object));
        }
    }
    Ok(all)
}

/// Installs the example's XRDs (its CRDs are in place, [`preinstall`]),
/// and whatever else its `crds/` hold but CRDs Crossplane installs itself
/// (Usages), and waits until the XR's CRD serves the XRD's spec fields.
fn install_definitions(cluster: &Cluster, dir: &Path) -> Step {
    let mut composite = Vec::new();
    for (name, object) in definitions(dir)? {
        match object["kind"].as_str() {
            Some("CustomResourceDefinition") => continue,
            Some("CompositeResourceDefinition") => {
                let fields: Vec<String> = object["spec"]["versions"][0]["schema"]
                    ["openAPIV3Schema"]["properties"]["spec"]["properties"]
                    .as_mapping()
                    .map(|m| m.keys().filter_map(|k| k.as_str().map(str::to_string)).collect())
                    .unwrap_or_default();
                composite.push((name.clone(), fields));
            }
            _ => {}
        }
        cluster.apply(&serde_yaml::to_string(&object).map_err(|e| e.to_string())?)?;
    }
    for (xrd, fields) in composite {
        // Crossplane defines the XR's own CRD, named as the XRD is. An
        // XRD another example defined differently is updated in place, and
        // its CRD follows a moment later: an XR created before then would
        // lose the fields the old schema lacks.
        wait_established(cluster, &xrd)?;
        wait_for(
            &format!("CRD {xrd} with the XRD's spec fields"),
            Duration::from_mins(1),
            || {
                let crd = cluster.json(&["get", "customresourcedefinition", &xrd])?;
                let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
                    ["properties"];
                Ok(fields
                    .iter()
                    .all(|field| !spec[field.as_str()].is_null())
                    .then_some(()))
            },
        )?;
    }
    Ok(())
}

fn wait_established(cluster: &Cluster, crd: &str) -> Step {
    wait_for(
        &format!("CRD {crd} established"),
        Duration::from_mins(1),
        || {
            let object = cluster.json(&["get", "customresourcedefinition", crd])?;
            Ok(condition(&object, "Established")
                .is_some_and(|c| c["status"] == "True")
                .then_some(()))
        },
    )
}

fn with_status(crd: &mut Yaml) {
    let Some(versions) = crd["spec"]["versions"].as_sequence_mut() else {
        return;
    };
    for version in versions {
        let status: Yaml =
            serde_yaml::from_str("{type: object, x-kubernetes-preserve-unknown-fields: true}")
                .unwrap();
        if let Some(properties) =
            version["schema"]["openAPIV3Schema"]["properties"].as_mapping_mut()
        {
            properties.entry("status".into()).or_insert(status);
        }
        if let Some(version) = version.as_mapping_mut() {
            version
                .entry("subresources".into())
                .or_insert_with(|| serde_yaml::from_str("{status: {}}").unwrap());
        }
    }
}

/// API groups whose CRDs Crossplane installs itself.
const CROSSPLANES: &[&str] = &[
    "protection.crossplane.io",
    "apiextensions.crossplane.io",
    "pkg.crossplane.io",
    "ops.crossplane.io",
];

/// Applies objects, then writes their `status` through the status
/// subresource, which an apply leaves alone: extra resources carry what
/// their controllers would have reported.
fn apply_with_status(cluster: &Cluster, text: &str) -> Step {
    cluster.apply(text)?;
    for document in serde_yaml::Deserializer::from_str(text) {
        let object = serde_json::Value::deserialize(document).map_err(|e| e.to_string())?;
        if !object["status"].is_object() {
            continue;
        }
        cluster.patch_status(&object, &object["status"])?;
    }
    Ok(())
}

/// What the example's `observed.yaml` says the cloud reports for each
/// composed resource, by composition resource name, conditions aside (the
/// stand-in provider sets those).
fn reported(dir: &Path) -> Step<HashMap<String, serde_json::Value>> {
    let path = dir.join("observed.yaml");
    let mut reported = HashMap::new();
    if !path.exists() {
        return Ok(reported);
    }
    for document in serde_yaml::Deserializer::from_str(&read(&path)?) {
        let object = serde_json::Value::deserialize(document)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let key = object["metadata"]["annotations"]["crossplane.io/composition-resource-name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let mut status = object["status"].clone();
        if let Some(status) = status.as_object_mut() {
            status.remove("conditions");
        }
        if !key.is_empty() && status.is_object() {
            reported.insert(key, status);
        }
    }
    Ok(reported)
}

/// `plural.group` of an object's kind, as kubectl names it.
fn resource_name(object: &Yaml) -> Step<String> {
    let kind = object["kind"].as_str().ok_or("the XR has no kind")?;
    Ok(resource_of(
        object["apiVersion"].as_str().unwrap_or_default(),
        kind,
    ))
}

/// RunFunction calls for the XR `name` the function's processes have
/// logged so far.
pub fn calls_for(cluster: &Cluster, name: &str) -> usize {
    cluster
        .function_logs_by_process()
        .iter()
        .map(|(_, log)| calls_in(log, name))
        .sum()
}

fn yaml_files(dir: &Path) -> Step<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    Ok(files)
}

fn read(path: &Path) -> Step<String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}
