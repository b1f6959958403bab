//! The function's `function_starlark_*` metrics, served at
//! `--metrics-address`.
//!
//! The `script` label comes from user input (a ConfigMap key, an inline
//! module's name), so its values are bounded: only names that resolved to
//! a script that ran become labels, at most [`MAX_SCRIPT_LABELS`] of them;
//! later names share `script="other"`, and a warning says so once. Calls
//! that failed before a script was found count in `script="(unresolved)"`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// The one label every series carries: the script's file name.
pub type Labels = Vec<(&'static str, String)>;

/// Distinct `script` label values kept; later scripts count as `other`.
pub const MAX_SCRIPT_LABELS: usize = 200;

/// The `script` label of calls that failed before a script was found.
pub const UNRESOLVED: &str = "(unresolved)";

/// The `script` label of scripts past [`MAX_SCRIPT_LABELS`].
pub const OTHER: &str = "other";

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
    /// Calls by how they ended (see [`crate::engine::Outcome`]).
    pub results: Family<Vec<(&'static str, &'static str)>, Counter>,
    /// Interpreter ticks per run.
    pub run_ticks: Histograms,
    /// The most memory a run held at once, in bytes.
    pub run_peak_bytes: Histograms,
    /// The `script` label values handed out so far.
    scripts: Arc<Mutex<HashSet<String>>>,
}

fn reconciliation_histogram() -> Histogram {
    Histogram::new([0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0])
}

fn ticks_histogram() -> Histogram {
    Histogram::new([
        100.0, 1_000.0, 10_000.0, 50_000.0, 100_000.0, 250_000.0, 500_000.0,
    ])
}

fn bytes_histogram() -> Histogram {
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        65_536.0, 4.0, 8,
    ))
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
            results: Family::default(),
            run_ticks: Family::new_with_constructor(ticks_histogram),
            run_peak_bytes: Family::new_with_constructor(bytes_histogram),
            scripts: Arc::default(),
        };
        for outcome in crate::engine::Outcome::ALL {
            let _ = m.results.get_or_create(&vec![("outcome", outcome.label())]);
        }
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
        registry.register(
            "function_starlark_results",
            "RunFunction calls by outcome: ok, script_error, fatal, step_limit, heap_limit, time_limit, input_error, module_error, internal",
            m.results.clone(),
        );
        registry.register(
            "function_starlark_run_ticks",
            "Interpreter ticks (loop iterations and calls) per run",
            m.run_ticks.clone(),
        );
        registry.register(
            "function_starlark_run_peak_bytes",
            "The most memory a run held at once",
            m.run_peak_bytes.clone(),
        );
        m
    }

    /// Counts a call that ended with `outcome`.
    pub fn result(&self, outcome: crate::engine::Outcome) {
        self.results
            .get_or_create(&vec![("outcome", outcome.label())])
            .inc();
    }

    /// The label set of a script that was found and ran: its name while
    /// fewer than [`MAX_SCRIPT_LABELS`] names are in use, else `other`.
    pub fn labels(&self, script: &str) -> Labels {
        let mut scripts = self
            .scripts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if scripts.contains(script) {
            return vec![("script", script.to_owned())];
        }
        if scripts.len() < MAX_SCRIPT_LABELS {
            scripts.insert(script.to_owned());
            return vec![("script", script.to_owned())];
        }
        if scripts.insert(OTHER.to_owned()) {
            tracing::warn!(
                cap = MAX_SCRIPT_LABELS,
                "metrics: {MAX_SCRIPT_LABELS} distinct script names already label series; further scripts count as script=\"other\""
            );
        }
        vec![("script", OTHER.to_owned())]
    }

    /// The label set of a call that failed before a script was found.
    pub fn unresolved() -> Labels {
        vec![("script", UNRESOLVED.to_owned())]
    }
}

impl Default for Metrics {
    /// Metrics registered nowhere, for tests and benches.
    fn default() -> Self {
        Metrics::register(&mut Registry::default())
    }
}
