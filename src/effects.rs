//! What builtins record while a script runs. Builtins only ever append
//! here; `apply.rs` turns the record into the response afterwards.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use function_sdk_rust::proto::v1::Ready;
use pbjson_types::Struct;
use starlark::any::ProvidesStaticType;
use starlark::environment::Module;
use starlark::eval::CallStack;
use starlark::values::Value;
use starlark::values::tuple::TupleRef;

use crate::convert::{ToPb, value_to_struct};
use crate::request::Request;

/// Who a condition or event is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The composite resource only.
    Composite,
    /// The composite resource and its claim.
    CompositeAndClaim,
}

impl Target {
    /// `"CompositeAndClaim"` targets the claim too; any other text, the XR.
    pub fn parse(s: &str) -> Self {
        if s == "CompositeAndClaim" {
            Target::CompositeAndClaim
        } else {
            Target::Composite
        }
    }
}

/// Severity of a recorded event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// A Normal result.
    Normal,
    /// A Warning result.
    Warning,
}

/// An event, which becomes a result in the response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Normal or Warning.
    pub severity: Severity,
    /// The text.
    pub message: String,
    /// Who it is for.
    pub target: Target,
}

/// A `set_condition` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    /// The condition type.
    pub kind: String,
    /// `"True"`, `"False"`, or anything else (Unknown).
    pub status: String,
    /// Machine-readable reason.
    pub reason: String,
    /// Human-readable message; omitted when empty.
    pub message: String,
    /// Who it is for.
    pub target: Target,
}

/// A composed resource's body, ready for the response.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// The encoding of a `google.protobuf.Struct`, as `Resource()` writes
    /// it straight from the script's dict (see [`crate::convert`]).
    Encoded(bytes::Bytes),
    /// A struct: an observed body emitted again as it was.
    Struct(Struct),
}

impl Body {
    /// The body as a struct, decoded when encoded.
    pub fn to_struct(&self) -> Struct {
        match self {
            Body::Struct(s) => s.clone(),
            Body::Encoded(bytes) => {
                prost::Message::decode(bytes.clone()).expect("a body this function encoded")
            }
        }
    }
}

/// A composed resource the script emitted.
#[derive(Debug, Clone, PartialEq)]
pub struct Emitted {
    /// The body, ready for the response.
    pub body: Body,
    /// Readiness as the script declared it.
    pub ready: Ready,
    /// Per-resource connection details.
    pub connection_details: BTreeMap<String, Vec<u8>>,
}

/// How a dependency was named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DependencyKind {
    /// Through a `ResourceRef`: must name an emitted resource.
    Ref,
    /// By name: may name something this script does not create.
    Name,
}

/// One `depends_on` element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    /// The resource that waits.
    pub dependent: String,
    /// The resource waited for.
    pub dependency: String,
    /// How it was named.
    pub kind: DependencyKind,
    /// For `(ref, "path")`: the field that must be truthy.
    pub field_path: Option<String>,
}

/// A `require_extra_resource(s)` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The selected resources' apiVersion.
    pub api_version: String,
    /// The selected resources' kind.
    pub kind: String,
    /// How they are matched.
    pub matching: Match,
    /// The one namespace to select in, if any.
    pub namespace: Option<String>,
}

/// How a requirement matches resources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Match {
    /// By name.
    Name(String),
    /// By labels (possibly none).
    Labels(BTreeMap<String, String>),
}

/// A `set_composite_ready` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyOverride {
    /// The XR's readiness.
    pub ready: bool,
    /// Condition reason; no condition when empty.
    pub reason: String,
    /// Condition message; omitted when empty.
    pub message: String,
}

/// Everything one run records.
#[derive(Debug, Default)]
pub struct Effects {
    /// Emitted (and preserved) resources by name; the last call wins.
    pub resources: RefCell<BTreeMap<String, Emitted>>,
    /// Names skipped so far, from any source; a name is skipped once.
    pub skipped: RefCell<HashSet<String>>,
    /// Skips that hold the XR's readiness back, in call order.
    pub gating_skips: RefCell<Vec<(String, String)>>,
    /// Dependencies in recording order.
    pub dependencies: RefCell<Vec<Dependency>>,
    /// `set_condition` calls in order.
    pub conditions: RefCell<Vec<Condition>>,
    /// Script and builtin events in order.
    pub events: RefCell<Vec<Event>>,
    /// Requirements by name; the last call wins.
    pub requirements: RefCell<BTreeMap<String, Requirement>>,
    /// Warnings about requirements, emitted after the events.
    pub requirement_warnings: RefCell<Vec<String>>,
    /// XR connection details from `set_connection_details`.
    pub xr_connection_details: RefCell<BTreeMap<String, Vec<u8>>>,
    /// The `set_response_ttl` duration in nanoseconds; the last call wins.
    pub response_ttl: Cell<Option<i64>>,
    /// The last `set_composite_ready` call.
    pub ready_override: RefCell<Option<ReadyOverride>>,
    /// The message of `fatal()`, once called.
    pub fatal: RefCell<Option<String>>,
    /// `Resource()` calls that used the 0.11.0 gating keywords: what to
    /// write instead in the first, and how many there were; see
    /// [`Effects::legacy_gating_warning`].
    pub legacy_gating: RefCell<Option<(String, usize)>>,
}

impl Effects {
    /// Records an event.
    pub fn event(&self, severity: Severity, message: String, target: Target) {
        self.events.borrow_mut().push(Event {
            severity,
            message,
            target,
        });
    }

    /// Records a Warning event for the XR.
    pub fn warn(&self, message: String) {
        self.event(Severity::Warning, message, Target::Composite);
    }

    /// The one Warning of a run whose `Resource()` calls used the 0.11.0
    /// gating keywords, naming the first call's replacement.
    pub fn legacy_gating_warning(&self) -> Option<String> {
        let legacy = self.legacy_gating.borrow();
        let (first, count) = legacy.as_ref()?;
        Some(match count {
            1 => first.clone(),
            n => format!(
                "{first}; {} more Resource() calls in this script use those keywords",
                n - 1
            ),
        })
    }

    /// Records a skip unless `name` was skipped before, with its event:
    /// a Warning for a skip that holds the XR back, a Normal one for an
    /// optional skip (0.11.0 warned of both alike).
    pub fn skip(&self, name: &str, reason: &str, skip: Skip) {
        if !self.skipped.borrow_mut().insert(name.to_owned()) {
            return;
        }
        let gate = matches!(skip, Skip::Gating | Skip::Legacy { gate: true });
        if gate {
            self.gating_skips
                .borrow_mut()
                .push((name.to_owned(), reason.to_owned()));
        }
        if let Skip::Optional = skip {
            self.event(
                Severity::Normal,
                format!("Skipping optional resource {name:?}: {reason}"),
                Target::Composite,
            );
        } else {
            self.warn(format!("Skipping resource {name:?}: {reason}"));
        }
    }
}

/// How a skip weighs on the XR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// The XR is not ready while the resource is skipped.
    Gating,
    /// The resource is absent by design; the XR may be ready without it.
    Optional,
    /// A skip of the 0.11.0 keywords, announced as 0.11.0 did.
    Legacy {
        /// Whether it holds the XR back.
        gate: bool,
    },
}

/// What builtins can see of the request, and where they record.
#[derive(ProvidesStaticType)]
pub struct Context {
    /// The request being answered.
    pub request: Arc<Request>,
    /// The observed composite's kind and name, for the log.
    pub xr_kind: String,
    pub xr_name: String,
    /// The run's memory limit, which the operator guards check.
    pub max_heap_bytes: usize,
    /// What the script did.
    pub effects: Effects,
    /// Every compilation of the run (main script and modules) and whether
    /// it was a cache hit, for the cache metrics.
    pub compilations: RefCell<Vec<(String, bool)>>,
    /// When the run must stop, for builtins that can work long without
    /// returning to the interpreter (which checks it between statements).
    pub deadline: Cell<Option<Instant>>,
    /// Bytes `print` wrote so far.
    pub printed: Cell<usize>,
    /// What `print` wrote, `(file, text)` per call, for the log.
    pub prints: RefCell<Vec<(String, String)>>,
    /// Whether a `load` failed (the outcome is then a module error).
    pub load_failed: Cell<bool>,
    /// Why the interpreter was stopped, once a budget stopped it.
    pub stopped: Cell<Option<Stopped>>,
    /// How many times a builtin reached this context: a module whose
    /// top level never does is independent of the request (see
    /// `runner::loading`).
    pub touched: Cell<u64>,
    /// What the `assert` module of a Go-format test reported, with where
    /// it was called from: a failed assertion does not stop the test.
    pub reports: RefCell<Vec<(String, CallStack)>>,
}

impl Context {
    /// A context for one run of a script answering `request`.
    pub fn new(request: Arc<Request>, max_heap_bytes: usize) -> Self {
        let head = request.composite_head();
        let (xr_kind, xr_name) = (head.kind.to_owned(), head.name.to_owned());
        crate::values::attr_dict::forget_broken_attribute();
        Context {
            request,
            xr_kind,
            xr_name,
            max_heap_bytes,
            effects: Effects::default(),
            compilations: RefCell::default(),
            deadline: Cell::default(),
            printed: Cell::default(),
            load_failed: Cell::default(),
            prints: RefCell::default(),
            stopped: Cell::default(),
            touched: Cell::default(),
            reports: RefCell::default(),
        }
    }

    /// The observed body of a composed resource.
    pub fn observed(&self, name: &str) -> Option<Struct> {
        self.request.observed_struct(name)
    }
}

/// Why a run was stopped before its end, when a budget stopped it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// The wall-clock limit passed.
    Time(Duration),
    /// The memory budget, in bytes, ran out.
    Memory(usize),
}

/// The original request globals, kept as the module's extra value so that
/// they are garbage-collection roots (a `Value` held anywhere else would be
/// left pointing at a moved object) and so that builtins and the response
/// use them even when a script rebinds their names.
#[derive(Clone, Copy)]
pub struct Originals<'v> {
    /// The desired composite body, writable.
    pub dxr: Value<'v>,
    /// Observed composed resources by name, frozen.
    pub observed: Value<'v>,
    /// Fetched extra resources by requirement name, frozen.
    pub extra_resources: Value<'v>,
    /// The pipeline context, writable.
    pub context: Value<'v>,
    /// An Operation step's output, writable.
    pub output: Value<'v>,
}

impl<'v> Originals<'v> {
    /// The originals of the module being evaluated.
    pub fn of(module: &Module<'v>) -> Option<Self> {
        let tuple = TupleRef::from_value(module.extra_value()?)?;
        match tuple.content() {
            [dxr, observed, extra_resources, context, output] => Some(Originals {
                dxr: *dxr,
                observed: *observed,
                extra_resources: *extra_resources,
                context: *context,
                output: *output,
            }),
            _ => None,
        }
    }

    /// `dxr` converted for the response.
    pub fn dxr_struct(&self) -> Result<Struct, String> {
        value_to_struct(self.dxr, ToPb::PLAIN).map_err(|e| e.to_string())
    }

    /// `context` converted for the response.
    pub fn context_struct(&self) -> Result<Struct, String> {
        value_to_struct(self.context, ToPb::PLAIN).map_err(|e| e.to_string())
    }

    /// `output` converted for the response.
    pub fn output_struct(&self) -> Result<Struct, String> {
        value_to_struct(self.output, ToPb::PLAIN).map_err(|e| e.to_string())
    }
}
