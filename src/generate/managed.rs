//! What the fields every Crossplane managed resource shares mean, written
//! into a managed kind's schema before its module is generated: providers'
//! CRDs describe these fields tersely or not at all, and they decide what a
//! composed resource does to the external one.

use serde_json::Value;

/// The fields of a managed resource's `spec`, and what each means.
const SPEC_FIELDS: [(&str, &str); 7] = [
    (
        "forProvider",
        "The desired state of the external resource. The provider creates the resource from it and keeps correcting the external resource back to it on every reconcile (late-initialized fields are filled in from what the cloud reports).",
    ),
    (
        "initProvider",
        "Fields set only when the external resource is created (write-once): the provider sends them on create and then stops managing them, so that another controller or a person may change them afterwards. Use it for fields forProvider would otherwise fight over, such as a node count an autoscaler owns.",
    ),
    (
        "providerConfigRef",
        "The ProviderConfig (credentials, region, endpoint) the provider uses for this resource; `default` when unset.",
    ),
    (
        "deletionPolicy",
        "What happens to the external resource when this managed resource is deleted: `Delete` (the default) deletes it, `Orphan` leaves it in place. With managementPolicies set, those decide instead.",
    ),
    (
        "managementPolicies",
        "Which actions the provider may take on the external resource: `[\"*\"]` (the default) for all; `[\"Observe\"]` only reads it (import an existing resource); combine `Create`, `Update`, `Delete`, `LateInitialize` and `Observe` for anything between.",
    ),
    (
        "writeConnectionSecretToRef",
        "The Secret the provider writes the resource's connection details (endpoints, passwords, keys) to, for the composite resource to collect.",
    ),
    (
        "publishConnectionDetailsTo",
        "Where to publish the connection details besides a Secret (an external secret store), with the metadata to attach.",
    ),
];

/// Puts what each shared field means before its own description, in the
/// `spec` of a managed kind's `schema`.
pub fn document(schema: &mut Value) {
    let Some(spec) = schema
        .pointer_mut("/properties/spec/properties")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for (field, meaning) in SPEC_FIELDS {
        let Some(Value::Object(property)) = spec.get_mut(field) else {
            continue;
        };
        let theirs = property
            .get("description")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|d| !d.is_empty());
        let text = match theirs {
            Some(theirs) if !theirs.starts_with(meaning) => format!("{meaning}\n\n{theirs}"),
            _ => meaning.to_owned(),
        };
        property.insert("description".to_owned(), Value::String(text));
    }
}

#[cfg(test)]
mod tests {
    use super::document;
    use serde_json::json;

    #[test]
    fn the_shared_fields_say_what_they_do_before_the_providers_words() {
        let mut schema = json!({"properties": {"spec": {"properties": {
            "forProvider": {"type": "object", "description": "Bucket parameters."},
            "initProvider": {"type": "object"},
            "region": {"type": "string", "description": "Region."},
        }}}});
        document(&mut schema);
        let spec = &schema["properties"]["spec"]["properties"];
        let for_provider = spec["forProvider"]["description"].as_str().unwrap();
        assert!(for_provider.starts_with("The desired state of the external resource."));
        assert!(for_provider.ends_with("\n\nBucket parameters."));
        assert!(
            spec["initProvider"]["description"]
                .as_str()
                .unwrap()
                .contains("write-once")
        );
        assert_eq!(spec["region"]["description"], "Region.");
    }
}
