//! What `gen` reads, as [`TypeDef`]s: every kind (and version) of the CRDs
//! or XRDs given, or every object type of Kubernetes OpenAPI documents
//! (Swagger 2.0 `definitions`, OpenAPI 3 `components.schemas`: the
//! `api/openapi-spec` of `k8s.io/kubernetes`, or what a cluster serves at
//! `/openapi/v2` and `/openapi/v3/...`), each placed in the module of its
//! API group and version.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::Source;

/// One object type to write as a constructor.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeDef {
    /// The module it goes in: `<group>/<version>.star` (`core` for
    /// Kubernetes' own group).
    pub file: String,
    /// The constructor's name: the kind, or the OpenAPI type's.
    pub name: String,
    /// Its OpenAPI schema (a kind's without `status`).
    pub schema: Value,
    /// `apiVersion` and `kind`, preset on a kind's constructor.
    pub preset: Option<(String, String)>,
    /// A Crossplane managed resource (`spec.forProvider`), whose standard
    /// fields get their meaning documented.
    pub managed: bool,
    /// The file it was read from.
    pub source: String,
}

/// Everything read: the types by their key (`group/version/Kind` for CRDs
/// and XRDs, the OpenAPI definition name otherwise), and the OpenAPI
/// definitions `$ref`s may name, for those that are no object type
/// (`Quantity` is a string).
#[derive(Default)]
pub struct Read {
    pub types: BTreeMap<String, TypeDef>,
    pub plain: BTreeMap<String, Value>,
}

/// The module file of an API group and version.
pub fn file_of(group: &str, version: &str) -> String {
    let group = if group.is_empty() { "core" } else { group };
    format!("{group}/{version}.star")
}

impl Read {
    /// Adds `def` under `key`; the same definition read twice is one, two
    /// different ones are an error naming both files.
    fn add(&mut self, key: String, def: TypeDef) -> Result<(), String> {
        match self.types.get(&key) {
            Some(old) if old.schema == def.schema && old.preset == def.preset => Ok(()),
            Some(old) => Err(format!(
                "{} and {} define {} differently: give one of them",
                old.source, def.source, key
            )),
            None => {
                self.types.insert(key, def);
                Ok(())
            }
        }
    }

    /// Reads the CRDs or XRDs (`source`) in the YAML `objects` of `file`.
    pub fn definitions(
        &mut self,
        objects: &[Value],
        source: Source,
        file: &Path,
    ) -> Result<(), String> {
        let from = file
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        for object in objects
            .iter()
            .filter(|o| o.get("kind").and_then(Value::as_str) == Some(source.kind()))
        {
            let spec = object.get("spec").cloned().unwrap_or_default();
            let text = |p: &str| spec.pointer(p).and_then(Value::as_str).unwrap_or_default();
            let (group, kind) = (text("/group"), text("/names/kind"));
            for (version, schema) in versions(&spec) {
                let mut schema = schema.clone();
                if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
                    // Crossplane and the provider write status; compositions do not.
                    props.remove("status");
                }
                let managed = schema
                    .pointer("/properties/spec/properties/forProvider")
                    .is_some();
                if managed {
                    super::managed::document(&mut schema);
                }
                let api_version = format!("{group}/{version}");
                let def = TypeDef {
                    file: file_of(group, &version),
                    name: kind.to_owned(),
                    schema,
                    preset: Some((api_version.clone(), kind.to_owned())),
                    managed,
                    source: from.clone(),
                };
                self.add(format!("{api_version}/{kind}"), def)?;
            }
        }
        Ok(())
    }

    /// Reads a Kubernetes OpenAPI document (Swagger 2.0 or OpenAPI 3).
    pub fn openapi(&mut self, document: &Value, file: &Path) -> Result<(), String> {
        let from = file
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let definitions = document
            .get("definitions")
            .or_else(|| document.pointer("/components/schemas"))
            .and_then(Value::as_object)
            .ok_or_else(|| {
                format!("{from}: neither `definitions` (OpenAPI 2) nor `components.schemas` (OpenAPI 3): is it an OpenAPI document?")
            })?;
        // Each package's group, from the kinds it holds: `io.k8s.api.core.v1`
        // holds Pod (group ""), so its other types go with Pod.
        let mut groups: BTreeMap<&str, String> = BTreeMap::new();
        for (name, schema) in definitions {
            if let Some((group, _, _)) = single_gvk(schema) {
                groups.entry(package(name)).or_insert(group);
            }
        }
        for (name, schema) in definitions {
            if !object_type(schema) {
                self.plain
                    .entry(name.clone())
                    .or_insert_with(|| schema.clone());
                continue;
            }
            let Some(file) = openapi_file(name, groups.get(package(name)).map(String::as_str))
            else {
                continue;
            };
            let mut schema = schema.clone();
            let gvk = single_gvk(&schema);
            if gvk.is_some()
                && let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut)
            {
                props.remove("status");
            }
            let short = name.rsplit('.').next().unwrap_or(name).to_owned();
            let def = TypeDef {
                file,
                name: short,
                schema,
                preset: gvk.map(|(group, version, kind)| {
                    let api_version = if group.is_empty() {
                        version
                    } else {
                        format!("{group}/{version}")
                    };
                    (api_version, kind)
                }),
                managed: false,
                source: from.clone(),
            };
            self.add(name.clone(), def)?;
        }
        Ok(())
    }
}

/// The served versions with a schema (apiextensions v1: each version's;
/// v1beta1: the one top-level schema for every version).
fn versions(spec: &Value) -> Vec<(String, &Value)> {
    let shared = spec.pointer("/validation/openAPIV3Schema");
    let mut out: Vec<(String, &Value)> = spec
        .get("versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            let name = v.get("name").and_then(Value::as_str)?;
            let schema = v.pointer("/schema/openAPIV3Schema").or(shared)?;
            Some((name.to_owned(), schema))
        })
        .collect();
    if out.is_empty()
        && let (Some(version), Some(schema)) = (spec.get("version").and_then(Value::as_str), shared)
    {
        out.push((version.to_owned(), schema));
    }
    out
}

/// The one group, version and kind an OpenAPI definition is served as.
fn single_gvk(schema: &Value) -> Option<(String, String, String)> {
    let list = schema.get("x-kubernetes-group-version-kind")?.as_array()?;
    let [only] = list.as_slice() else {
        return None;
    };
    let text = |k: &str| only.get(k).and_then(Value::as_str).map(str::to_owned);
    Some((text("group")?, text("version")?, text("kind")?))
}

/// `io.k8s.api.apps.v1.Deployment` -> `io.k8s.api.apps.v1`.
fn package(name: &str) -> &str {
    name.rsplit_once('.').map_or("", |(p, _)| p)
}

/// Whether an OpenAPI definition is an object type with fields (a string
/// type such as `Quantity` or `IntOrString` is no constructor).
fn object_type(schema: &Value) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty())
}

/// The module of an OpenAPI type: its package's group (from its kinds, or
/// the package's next-to-last part: `...pkg.apis.meta.v1` is `meta`) and
/// the package's version (its last part, when it is one).
fn openapi_file(name: &str, group: Option<&str>) -> Option<String> {
    let package = package(name);
    let (rest, version) = package.rsplit_once('.')?;
    let is_version =
        version.starts_with('v') && version[1..].starts_with(|c: char| c.is_ascii_digit());
    if !is_version {
        return None;
    }
    let group = match group {
        Some(g) => g.to_owned(),
        None => rest.rsplit('.').next()?.to_owned(),
    };
    Some(file_of(&group, version))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn openapi_types_go_to_their_groups_module() {
        assert_eq!(
            openapi_file("io.k8s.api.apps.v1.Deployment", Some("apps")).as_deref(),
            Some("apps/v1.star")
        );
        assert_eq!(
            openapi_file("io.k8s.api.core.v1.PodSpec", Some("")).as_deref(),
            Some("core/v1.star")
        );
        assert_eq!(
            openapi_file("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", None).as_deref(),
            Some("meta/v1.star")
        );
        assert_eq!(
            openapi_file("io.k8s.apimachinery.pkg.api.resource.Quantity", None),
            None
        );
    }

    #[test]
    fn the_same_definition_twice_is_one_and_two_different_ones_are_named() {
        let crd = |description: &str| {
            json!({"kind": "CustomResourceDefinition", "spec": {"group": "g.io", "names": {"kind": "K"},
                "versions": [{"name": "v1", "schema": {"openAPIV3Schema": {"type": "object", "description": description,
                    "properties": {"spec": {"type": "object"}, "status": {"type": "object"}}}}}]}})
        };
        let mut read = Read::default();
        read.definitions(&[crd("a")], Source::Crd, Path::new("one.yaml"))
            .unwrap();
        read.definitions(&[crd("a")], Source::Crd, Path::new("two.yaml"))
            .unwrap();
        assert_eq!(read.types.len(), 1);
        let def = &read.types["g.io/v1/K"];
        assert_eq!(def.file, "g.io/v1.star");
        assert!(def.schema.pointer("/properties/status").is_none());
        let e = read
            .definitions(&[crd("b")], Source::Crd, Path::new("three.yaml"))
            .unwrap_err();
        assert_eq!(
            e,
            "one.yaml and three.yaml define g.io/v1/K differently: give one of them"
        );
    }
}
