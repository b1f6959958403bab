//! The per-request globals: `oxr`, `dxr`, `observed`, `context`,
//! `environment`, `extra_resources`, and for Operations `output` and
//! `watched`, built from the request on the run's module. The read-only
//! ones live on the module's frozen heap, so every mutation fails as it
//! does in the reference.

use function_sdk_rust::proto::v1::{Resources, RunFunctionRequest};
use pbjson_types::Struct;
use pbjson_types::value::Kind;
use starlark::environment::Module;
use starlark::values::tuple::AllocTuple;
use starlark::values::{FrozenHeap, FrozenHeapRef, FrozenValue, Value};

use crate::convert::{
    Flavor, encoded_struct_to_frozen, frozen_list, frozen_plain_dict, struct_to_frozen,
    struct_to_value,
};
use crate::error::Error;
use crate::request::{Body, Request};
use crate::values::attr_dict::FrozenAttrDict;

/// The context key holding the EnvironmentConfig data.
pub const ENVIRONMENT_KEY: &str = "apiextensions.crossplane.io/environment";

/// The required resource under which a WatchOperation hands its function
/// the resource that changed.
pub const WATCHED_RESOURCE_KEY: &str = "ops.crossplane.io/watched-resource";

static EMPTY: std::sync::LazyLock<Struct> = std::sync::LazyLock::new(Struct::default);

/// The read-only request globals, built once per request on a heap every
/// module of the request references, so the main script and every loaded
/// module see the very same objects.
pub struct Shared {
    heap: FrozenHeapRef,
    oxr: FrozenValue,
    observed: FrozenValue,
    environment: FrozenValue,
    extra_resources: FrozenValue,
    /// The resource a WatchOperation watched, or `None`.
    watched: FrozenValue,
    /// Loaded modules cannot share the main script's mutable `dxr` and
    /// `context` (they live on its heap); they see these read-only copies.
    dxr_snapshot: FrozenValue,
    context_snapshot: FrozenValue,
    /// What loaded modules see as `output`: an empty, read-only dict.
    output_snapshot: FrozenValue,
}

/// The names [`Shared`] binds in every module, which modules never export.
pub const REQUEST_GLOBALS: [&str; 8] = [
    "oxr",
    "dxr",
    "observed",
    "context",
    "environment",
    "extra_resources",
    "output",
    "watched",
];

fn desired_composite(request: &RunFunctionRequest) -> &Struct {
    request
        .desired
        .as_ref()
        .and_then(|d| d.composite.as_ref())
        .and_then(|c| c.resource.as_ref())
        .unwrap_or(&EMPTY)
}

fn context_body(request: &RunFunctionRequest) -> &Struct {
    request.context.as_ref().unwrap_or(&EMPTY)
}

impl Shared {
    /// Builds the globals in the reference's order (observed, then oxr,
    /// dxr, context, environment, extra_resources).
    pub fn build(request: &Request) -> Result<Self, Error> {
        let frozen = FrozenHeap::new();
        let globals = |global: &'static str| {
            move |e: crate::convert::ConvertError| Error::Globals {
                global,
                detail: e.to_string(),
            }
        };

        let mut names: Vec<&String> = request
            .observed
            .as_ref()
            .map(|o| o.resources.keys().collect())
            .unwrap_or_default();
        names.sort();
        let mut observed = Vec::with_capacity(names.len());
        for name in names {
            let converted = match request.observed_body(name) {
                Some(Body::Encoded(bytes)) => {
                    encoded_struct_to_frozen(&frozen, bytes, Flavor::Attr)
                }
                Some(Body::Decoded(body)) => struct_to_frozen(&frozen, body, Flavor::Attr),
                None => struct_to_frozen(&frozen, &EMPTY, Flavor::Attr),
            };
            let value = match converted {
                Ok(value) => value,
                Err(e) if e.is_malformed() => {
                    return Err(Error::Observed {
                        name: name.clone(),
                        detail: e.to_string(),
                    });
                }
                Err(e) => broken(&frozen, e),
            };
            observed.push((name.clone(), value));
        }
        let observed = struct_like(&frozen, observed);

        let oxr = match request.composite_body() {
            Body::Encoded(bytes) => encoded_struct_to_frozen(&frozen, bytes, Flavor::Attr),
            Body::Decoded(body) => struct_to_frozen(&frozen, body, Flavor::Attr),
        }
        .map_err(globals("oxr"))?;
        let dxr_snapshot = struct_to_frozen(&frozen, desired_composite(request), Flavor::Attr)
            .map_err(globals("dxr"))?;
        let context_body = context_body(request);
        let context_snapshot =
            struct_to_frozen(&frozen, context_body, Flavor::Plain).map_err(globals("context"))?;
        let environment_body = match context_body
            .fields
            .get(ENVIRONMENT_KEY)
            .and_then(|v| v.kind.as_ref())
        {
            Some(Kind::StructValue(s)) => s,
            _ => &EMPTY,
        };
        let environment = struct_to_frozen(&frozen, environment_body, Flavor::Attr)
            .map_err(globals("environment"))?;
        let extra_resources =
            extra_resources(&frozen, request).map_err(globals("extra_resources"))?;
        let watched = watched(&frozen, request).map_err(globals("watched"))?;
        let output_snapshot = frozen_plain_dict(&frozen, Vec::new());
        Ok(Shared {
            heap: frozen.into_ref(),
            oxr,
            observed,
            environment,
            extra_resources,
            watched,
            dxr_snapshot,
            context_snapshot,
            output_snapshot,
        })
    }

    /// Binds the globals of the main script: the shared read-only ones and
    /// fresh writable `dxr`, `context` and `output`.
    pub fn bind_main(&self, module: &Module<'_>, request: &RunFunctionRequest) {
        let heap = module.heap();
        // The snapshots converted without error, so these conversions cannot fail.
        let dxr = struct_to_value(heap, desired_composite(request), Flavor::Attr)
            .unwrap_or_else(|_| self.dxr_snapshot.to_value());
        let context = struct_to_value(heap, context_body(request), Flavor::Plain)
            .unwrap_or_else(|_| self.context_snapshot.to_value());
        let output = struct_to_value(heap, &EMPTY, Flavor::Plain)
            .unwrap_or_else(|_| self.output_snapshot.to_value());
        self.bind(module, dxr, context, output);
    }

    /// Binds the globals of a loaded module: all of them read-only.
    pub fn bind_module(&self, module: &Module<'_>) {
        self.bind(
            module,
            self.dxr_snapshot.to_value(),
            self.context_snapshot.to_value(),
            self.output_snapshot.to_value(),
        );
    }

    fn bind<'v>(&self, module: &Module<'v>, dxr: Value<'v>, context: Value<'v>, output: Value<'v>) {
        module.frozen_heap().add_reference(&self.heap);
        let values = [
            self.oxr.to_value(),
            dxr,
            self.observed.to_value(),
            context,
            self.environment.to_value(),
            self.extra_resources.to_value(),
            output,
            self.watched.to_value(),
        ];
        for (name, value) in REQUEST_GLOBALS.iter().zip(values) {
            module.set(name, value);
        }
        let originals = module.heap().alloc(AllocTuple([
            dxr,
            self.observed.to_value(),
            self.extra_resources.to_value(),
            context,
            output,
        ]));
        module.set_extra_value(originals);
    }
}

fn struct_like(
    frozen: &starlark::values::FrozenHeap,
    entries: Vec<(String, FrozenValue)>,
) -> FrozenValue {
    frozen.alloc(crate::values::attr_dict::FrozenAttrDict::new(
        entries.into_iter().collect(),
    ))
}

/// `required_resources` when it has entries, else the deprecated
/// `extra_resources`: name → `None` (nothing matched) or a list of bodies.
/// A body whose values have no Starlark form (a whole number beyond 64
/// bits): the run goes on, and reading from the body raises the error, as
/// the Go implementation's lazily converted bodies do.
fn broken(frozen: &FrozenHeap, e: crate::convert::ConvertError) -> FrozenValue {
    frozen.alloc(FrozenAttrDict::broken(e.to_string()))
}

/// The resource a WatchOperation watched (the first under
/// [`WATCHED_RESOURCE_KEY`] in the request's required resources), or `None`.
fn watched(
    frozen: &starlark::values::FrozenHeap,
    request: &RunFunctionRequest,
) -> Result<FrozenValue, crate::convert::ConvertError> {
    let body = request
        .required_resources
        .get(WATCHED_RESOURCE_KEY)
        .and_then(|resources| resources.items.first())
        .and_then(|item| item.resource.as_ref());
    match body {
        None => Ok(FrozenValue::new_none()),
        Some(body) => match struct_to_frozen(frozen, body, Flavor::Attr) {
            Ok(value) => Ok(value),
            Err(e) if e.is_malformed() => Err(e),
            Err(e) => Ok(broken(frozen, e)),
        },
    }
}

fn extra_resources(
    frozen: &starlark::values::FrozenHeap,
    request: &RunFunctionRequest,
) -> Result<FrozenValue, crate::convert::ConvertError> {
    let source = if request.required_resources.is_empty() {
        &request.extra_resources
    } else {
        &request.required_resources
    };
    let mut names: Vec<(&String, &Resources)> = source.iter().collect();
    names.sort_by(|a, b| a.0.cmp(b.0));
    let mut entries = Vec::with_capacity(names.len());
    for (name, resources) in names {
        let value = if resources.items.is_empty() {
            FrozenValue::new_none()
        } else {
            let mut items = Vec::with_capacity(resources.items.len());
            for item in &resources.items {
                let body = item.resource.as_ref().unwrap_or(&EMPTY);
                items.push(match struct_to_frozen(frozen, body, Flavor::Attr) {
                    Ok(value) => value,
                    Err(e) if e.is_malformed() => return Err(e),
                    Err(e) => broken(frozen, e),
                });
            }
            frozen_list(frozen, items)
        };
        entries.push((name.clone(), value));
    }
    Ok(frozen_plain_dict(frozen, entries))
}
