//! The function's `function_starlark_*` metrics, registered on the
//! registry the SDK serves at `--metrics-address`.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// The one label every series carries: the script's file name.
pub type Labels = Vec<(&'static str, String)>;

type Histograms = Family<Labels, Histogram, fn() -> Histogram>;

/// Every metric of the function.
#[derive(Clone)]
pub struct Metrics {
    /// RunFunction calls that got past the source check.
    pub reconciliations: Family<Labels, Counter>,
    /// Whole-handler time of those calls.
    pub reconciliation_duration: Histograms,
    /// Compile (or cache lookup) plus run time of the main script.
    pub execution_duration: Histograms,
    /// Time spent resolving OCI modules, when a request has OCI targets.
    pub oci_resolve_duration: Histograms,
    /// Compiled-script cache hits.
    pub cache_hits: Family<Labels, Counter>,
    /// Compilations.
    pub cache_misses: Family<Labels, Counter>,
    /// Composed resources written to desired state.
    pub resources_emitted: Family<Labels, Counter>,
    /// Resources newly skipped, from any source.
    pub resources_skipped: Family<Labels, Counter>,
    /// Resources held back by creation sequencing.
    pub resources_deferred: Family<Labels, Counter>,
}

fn reconciliation_histogram() -> Histogram {
    Histogram::new([0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0])
}

fn execution_histogram() -> Histogram {
    Histogram::new([0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5])
}

impl Metrics {
    /// Creates the metrics and registers them on `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let m = Metrics {
            reconciliations: Family::default(),
            reconciliation_duration: Family::new_with_constructor(reconciliation_histogram),
            execution_duration: Family::new_with_constructor(execution_histogram),
            oci_resolve_duration: Family::new_with_constructor(reconciliation_histogram),
            cache_hits: Family::default(),
            cache_misses: Family::default(),
            resources_emitted: Family::default(),
            resources_skipped: Family::default(),
            resources_deferred: Family::default(),
        };
        // Counter names register without `_total`; the encoder appends it.
        registry.register(
            "function_starlark_reconciliations",
            "Total RunFunction calls",
            m.reconciliations.clone(),
        );
        registry.register(
            "function_starlark_reconciliation_duration_seconds",
            "Total RunFunction handler duration",
            m.reconciliation_duration.clone(),
        );
        registry.register(
            "function_starlark_execution_duration_seconds",
            "Time spent executing Starlark scripts (compilation + run)",
            m.execution_duration.clone(),
        );
        registry.register(
            "function_starlark_oci_resolve_duration_seconds",
            "Time spent resolving OCI modules",
            m.oci_resolve_duration.clone(),
        );
        registry.register(
            "function_starlark_cache_hits",
            "Total bytecode cache hits",
            m.cache_hits.clone(),
        );
        registry.register(
            "function_starlark_cache_misses",
            "Total bytecode cache misses (compilations)",
            m.cache_misses.clone(),
        );
        registry.register(
            "function_starlark_resources_emitted",
            "Total composed resources emitted",
            m.resources_emitted.clone(),
        );
        registry.register(
            "function_starlark_resources_skipped",
            "Total resources skipped",
            m.resources_skipped.clone(),
        );
        registry.register(
            "function_starlark_resources_deferred",
            "Total resources deferred by creation sequencing",
            m.resources_deferred.clone(),
        );
        m
    }

    /// The label set of a script.
    pub fn labels(script: &str) -> Labels {
        vec![("script", script.to_owned())]
    }
}

impl Default for Metrics {
    /// Metrics registered nowhere, for tests and benches.
    fn default() -> Self {
        Metrics::register(&mut Registry::default())
    }
}
