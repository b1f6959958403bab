//! The function's `function_starlark_*` metrics, served at
//! `--metrics-address`.
//!
//! The `script` label comes from user input (a ConfigMap key, an inline
//! module's name), so its values are bounded: only names that resolved to
//! a script that ran become labels, at most [`MAX_SCRIPT_LABELS`] of them;
//! later names share `script="other"`, and a warning says so once. Calls
//! that failed before a script was found count in `script="(unresolved)"`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::wire::Outcome;

/// The one label every series carries: the script's file name.
type Labels = Vec<(&'static str, String)>;

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
    families: Families,
    /// By outcome, in the order of [`Outcome::ALL`].
    results: Arc<[Counter]>,
    /// The series of each `script` label value handed out so far.
    scripts: Arc<Mutex<HashMap<String, Arc<Series>>>>,
    unresolved: Arc<Series>,
}

/// The metric families, labelled by script but for `results`.
#[derive(Clone)]
struct Families {
    /// RunFunction calls that got past the source check.
    reconciliations: Family<Labels, Counter>,
    /// Whole-handler time of those calls.
    reconciliation_duration: Histograms,
    /// Compile (or cache lookup) plus run time of the main script.
    execution_duration: Histograms,
    /// Time spent resolving OCI modules, when a request has OCI targets.
    oci_resolve_duration: Histograms,
    /// Compiled-script cache hits.
    cache_hits: Family<Labels, Counter>,
    /// Compilations.
    cache_misses: Family<Labels, Counter>,
    /// Composed resources written to desired state.
    resources_emitted: Family<Labels, Counter>,
    /// Resources newly skipped, from any source, by script and by the kind
    /// of the composite they belong to.
    resources_skipped: Family<Labels, Counter>,
    /// Resources held back by creation sequencing.
    resources_deferred: Family<Labels, Counter>,
    /// Calls by how they ended (see [`Outcome`]).
    results: Family<Vec<(&'static str, &'static str)>, Counter>,
    /// Interpreter ticks per run.
    run_ticks: Histograms,
    /// The most memory a run held at once, in bytes.
    run_peak_bytes: Histograms,
}

/// Declares [`Series`], with one kept handle and one accessor per family
/// labelled by script.
macro_rules! series {
    ($($name:ident: $kind:ty, $doc:literal;)*) => {
        /// The series of one `script` label value. Each is found in its
        /// family the first time a call uses it and kept (a handle shares
        /// its value with the family), so a call does not hash its labels
        /// once per metric; a series no call used is not created, so it is
        /// not exposed either.
        pub struct Series {
            labels: Labels,
            families: Families,
            $($name: OnceLock<$kind>,)*
        }

        impl Series {
            fn new(script: &str, families: &Families) -> Series {
                Series {
                    labels: vec![("script", script.to_owned())],
                    families: families.clone(),
                    $($name: OnceLock::new(),)*
                }
            }

            $(
                #[doc = $doc]
                pub fn $name(&self) -> &$kind {
                    self.$name
                        .get_or_init(|| self.families.$name.get_or_create(&self.labels).clone())
                }
            )*
        }
    };
}

series! {
    reconciliations: Counter, "RunFunction calls that got past the source check.";
    reconciliation_duration: Histogram, "Whole-handler time of those calls, in seconds.";
    execution_duration: Histogram, "Compile (or cache lookup) plus run time of the main script.";
    oci_resolve_duration: Histogram, "Time spent resolving OCI modules.";
    cache_hits: Counter, "Compiled-script cache hits.";
    cache_misses: Counter, "Compilations.";
    resources_emitted: Counter, "Composed resources written to desired state.";
    resources_deferred: Counter, "Resources held back by creation sequencing.";
    run_ticks: Histogram, "Interpreter ticks per run.";
    run_peak_bytes: Histogram, "The most memory a run held at once, in bytes.";
}

impl Series {
    /// Resources newly skipped for a composite of `kind` (the label the Go
    /// implementation added in 0.11.1; empty without an observed XR).
    pub fn resources_skipped(&self, kind: &str) -> Counter {
        let mut labels = self.labels.clone();
        labels.push(("composite_kind", kind.to_owned()));
        self.families
            .resources_skipped
            .get_or_create(&labels)
            .clone()
    }

    /// The `script` label's value.
    pub fn script(&self) -> &str {
        self.labels.first().map_or("", |(_, v)| v.as_str())
    }
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
        let f = Families {
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
        };
        // Every outcome's series exists from the start, at zero.
        let results = Outcome::ALL
            .iter()
            .map(|outcome| {
                f.results
                    .get_or_create(&vec![("outcome", outcome.label())])
                    .clone()
            })
            .collect();
        // Counter names register without `_total`; the encoder appends it.
        registry.register(
            "function_starlark_reconciliations",
            "Total RunFunction calls",
            f.reconciliations.clone(),
        );
        registry.register(
            "function_starlark_reconciliation_duration_seconds",
            "Total RunFunction handler duration",
            f.reconciliation_duration.clone(),
        );
        registry.register(
            "function_starlark_execution_duration_seconds",
            "Time spent executing Starlark scripts (compilation + run)",
            f.execution_duration.clone(),
        );
        registry.register(
            "function_starlark_oci_resolve_duration_seconds",
            "Time spent resolving OCI modules",
            f.oci_resolve_duration.clone(),
        );
        registry.register(
            "function_starlark_cache_hits",
            "Total bytecode cache hits",
            f.cache_hits.clone(),
        );
        registry.register(
            "function_starlark_cache_misses",
            "Total bytecode cache misses (compilations)",
            f.cache_misses.clone(),
        );
        registry.register(
            "function_starlark_resources_emitted",
            "Total composed resources emitted",
            f.resources_emitted.clone(),
        );
        registry.register(
            "function_starlark_resources_skipped",
            "Total resources skipped",
            f.resources_skipped.clone(),
        );
        registry.register(
            "function_starlark_resources_deferred",
            "Total resources deferred by creation sequencing",
            f.resources_deferred.clone(),
        );
        registry.register(
            "function_starlark_results",
            "RunFunction calls by outcome: ok, script_error, fatal, step_limit, heap_limit, time_limit, input_error, module_error, internal",
            f.results.clone(),
        );
        registry.register(
            "function_starlark_run_ticks",
            "Interpreter ticks (loop iterations and calls) per run",
            f.run_ticks.clone(),
        );
        registry.register(
            "function_starlark_run_peak_bytes",
            "The most memory a run held at once",
            f.run_peak_bytes.clone(),
        );
        Metrics {
            unresolved: Arc::new(Series::new(UNRESOLVED, &f)),
            families: f,
            results,
            scripts: Arc::default(),
        }
    }

    /// Counts a call that ended with `outcome`.
    pub fn result(&self, outcome: Outcome) {
        // `Outcome::ALL` lists the outcomes by value, from 0.
        if let Some(counter) = usize::try_from(outcome as i32)
            .ok()
            .and_then(|i| self.results.get(i))
        {
            counter.inc();
        }
    }

    /// The series of a script that was found and ran: its name while
    /// fewer than [`MAX_SCRIPT_LABELS`] names are in use, else `other`.
    pub fn series(&self, script: &str) -> Arc<Series> {
        let mut scripts = self
            .scripts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(series) = scripts.get(script) {
            return Arc::clone(series);
        }
        let name = if scripts.len() < MAX_SCRIPT_LABELS {
            script
        } else {
            if !scripts.contains_key(OTHER) {
                tracing::warn!(
                    cap = MAX_SCRIPT_LABELS,
                    "metrics: {MAX_SCRIPT_LABELS} distinct script names already label series; further scripts count as script=\"other\""
                );
            }
            OTHER
        };
        Arc::clone(
            scripts
                .entry(name.to_owned())
                .or_insert_with(|| Arc::new(Series::new(name, &self.families))),
        )
    }

    /// The series of a call that failed before a script was found.
    pub fn unresolved(&self) -> Arc<Series> {
        Arc::clone(&self.unresolved)
    }
}

impl Default for Metrics {
    /// Metrics registered nowhere, for tests and benches.
    fn default() -> Self {
        Metrics::register(&mut Registry::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exposed(registry: &Registry) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, registry).unwrap();
        out
    }

    #[test]
    fn a_script_keeps_one_series_and_only_used_series_are_exposed() {
        let mut registry = Registry::default();
        let metrics = Metrics::register(&mut registry);
        metrics.series("a.star").reconciliations().inc();
        metrics.series("a.star").reconciliations().inc();
        metrics.series("a.star").run_ticks().observe(5.0);
        assert!(Arc::ptr_eq(
            &metrics.series("a.star"),
            &metrics.series("a.star")
        ));
        metrics.unresolved().reconciliations().inc();
        metrics.result(Outcome::StepLimit);
        metrics.result(Outcome::Internal);
        let text = exposed(&registry);
        assert!(
            text.contains("function_starlark_reconciliations_total{script=\"a.star\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("function_starlark_reconciliations_total{script=\"(unresolved)\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("function_starlark_run_ticks_count{script=\"a.star\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("function_starlark_results_total{outcome=\"step_limit\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("function_starlark_results_total{outcome=\"internal\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("function_starlark_results_total{outcome=\"ok\"} 0"),
            "{text}"
        );
        // Series no call used are not created.
        assert!(
            !text.contains("function_starlark_resources_deferred_total{"),
            "{text}"
        );
        assert!(!text.contains("run_peak_bytes_count"), "{text}");
    }

    #[test]
    fn outcomes_are_listed_by_value() {
        // `Metrics::result` finds an outcome's counter by its value.
        for (i, outcome) in Outcome::ALL.iter().enumerate() {
            assert_eq!(*outcome as usize, i, "{outcome:?}");
        }
    }

    #[test]
    fn scripts_past_the_cap_share_other() {
        let metrics = Metrics::default();
        for i in 0..MAX_SCRIPT_LABELS {
            assert_eq!(
                metrics.series(&format!("s{i}.star")).script(),
                format!("s{i}.star")
            );
        }
        assert_eq!(metrics.series("late.star").script(), OTHER);
        assert_eq!(metrics.series("later.star").script(), OTHER);
        // Names already labelled keep their own series.
        assert_eq!(metrics.series("s0.star").script(), "s0.star");
    }
}
