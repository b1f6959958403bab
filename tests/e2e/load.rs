//! `count` XRs created at once: how many calls and how long it takes them
//! all to be ready, what the function spent, and that settled XRs are left
//! alone afterwards. Run on its own (`-- load`), three times in a row for
//! the numbers docs/live-control-plane.md gives; with `E2E_THIS`, another
//! build of this function (a release build) serves them in the installed
//! one's place (`scripts/cluster.sh stand-in`); with `E2E_PEER`, the Go
//! implementation then serves the same runs the same way, and the two are
//! compared. The XRs select `scenarios::PLAIN`, which both run alike, and
//! calls are Crossplane's own count.

use std::fmt;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cluster::{Cluster, Step, crossplane_calls, wait_for};
use crate::scenarios::{
    PLAIN, create, delete, delete_all, expect, is, manifest, on_xprobes, ratio, wait_ready,
};

/// One load run's readings.
#[derive(Clone)]
pub struct Run {
    count: usize,
    all_ready: Duration,
    calls: usize,
    /// Calls in the 20 s after every XR was ready.
    later: usize,
    cpu: Duration,
    rss_mib: f64,
}

impl Run {
    fn per_xr(&self) -> f64 {
        ratio(self.calls, self.count)
    }

    fn cpu_ms_per_call(&self) -> f64 {
        self.cpu.as_secs_f64() * 1000.0 / ratio(self.calls.max(1), 1)
    }
}

impl fmt::Display for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} XRs ready in {:.1} s, {} calls ({:.2} per XR), {} calls in the 20 s after, function CPU {:.1} s ({:.2} ms per call), RSS {:.0} MiB",
            self.count,
            self.all_ready.as_secs_f64(),
            self.calls,
            self.per_xr(),
            self.later,
            self.cpu.as_secs_f64(),
            self.cpu_ms_per_call(),
            self.rss_mib,
        )
    }
}

/// One XR composed and deleted before the load runs, as on a cluster
/// whose XR kind has served XRs before. Crossplane starts watching the
/// kinds an XR kind composes (ConfigMaps or ClusterRoles, Usages) when its first XRs
/// compose them; 200 XRs arriving on a fresh XR kind meet a Composition
/// cache not yet filled ("cannot fetch Composition") and reconciles of
/// stale copies while those watches start, and draw about nine calls per
/// XR where a warm kind needs four (seen in Crossplane's --debug log).
pub fn warm_up(cluster: &Cluster) -> Step {
    create(cluster, "warm-up", &spec(cluster))?;
    wait_ready(cluster, "warm-up", Duration::from_mins(1))?;
    delete(cluster, "warm-up", &["--wait=true", "--timeout=60s"])
}

/// A load XR's spec: the probe's greeting, composed by `PLAIN`.
fn spec(cluster: &Cluster) -> String {
    let reference = format!("compositionRef: {{name: {PLAIN}}}");
    if cluster.legacy() {
        format!("{{greeting: hello, {reference}}}")
    } else {
        format!("{{greeting: hello, crossplane: {{{reference}}}}}")
    }
}

/// A load run held to what is asked of the function: at most 7 calls per
/// XR and settled XRs left alone.
pub fn held(run: &Run) -> Step<String> {
    let summary = run.to_string();
    let seen = Value::String(summary.clone());
    expect(run.per_xr() <= 7.0, "at most 7 calls per XR", &seen)?;
    expect(run.later <= run.count / 50, "settled XRs left alone", &seen)?;
    Ok(summary)
}

/// A reading of a run, for comparing medians.
type Reading = fn(&Run) -> f64;

/// This function's runs against the Go implementation's, every measured
/// run counted: the medians of each (the later of the middle two for an
/// even count), held to half the CPU per call and no more calls per XR.
pub fn side_by_side(ours: &[Run], peers: &[Run]) -> Step<String> {
    let median = |runs: &[Run], of: Reading| {
        let mut values: Vec<f64> = runs.iter().map(of).collect();
        values.sort_by(f64::total_cmp);
        values.get(values.len() / 2).copied()
    };
    let readings: [(&str, Reading); 4] = [
        ("CPU ms per call", Run::cpu_ms_per_call),
        ("calls per XR", Run::per_xr),
        ("s to all Ready", |run| run.all_ready.as_secs_f64()),
        ("RSS MiB", |run| run.rss_mib),
    ];
    let mut table = Vec::new();
    let mut ratios = Vec::new();
    for (name, of) in readings {
        let (Some(this), Some(peer)) = (median(ours, of), median(peers, of)) else {
            return Err("no completed run on one side to compare".into());
        };
        ratios.push(this / peer);
        table.push(format!(
            "{name} {this:.2} against {peer:.2} ({:.2})",
            this / peer
        ));
    }
    let summary = format!(
        "medians of {} and {} runs, this function against the Go implementation: {}",
        ours.len(),
        peers.len(),
        table.join(", ")
    );
    let seen = Value::String(summary.clone());
    expect(ratios[0] <= 0.5, "at most half the CPU per call", &seen)?;
    expect(ratios[1] <= 1.0, "no more calls per XR", &seen)?;
    Ok(summary)
}

/// How long Crossplane must have made no call before a run starts.
const QUIET: Duration = Duration::from_secs(5);

/// Waits until Crossplane has made no call for [`QUIET`]. The run before
/// (a first burst most of all) can leave reconciles going after its XRs
/// are deleted, and a run started among them counts their calls too: one
/// right after a first burst that was still calling 20 s after it was
/// ready read 7.35 calls per XR, the two after it 4.2.
fn wait_quiet() -> Step {
    let mut last = crossplane_calls()?;
    wait_for(
        &format!("no call for {QUIET:?}"),
        Duration::from_mins(3),
        || {
            std::thread::sleep(QUIET);
            let now = crossplane_calls()?;
            let moved = now.saturating_sub(last);
            last = now;
            if moved == 0 {
                Ok(Some(()))
            } else {
                Err(format!("{moved} calls in the last {QUIET:?}"))
            }
        },
    )
}

/// One run of `count` XRs, held to nothing, on a quiet control plane.
pub fn measure(cluster: &Cluster, count: usize) -> Step<Run> {
    wait_quiet()?;
    let names: Vec<String> = (0..count).map(|i| format!("load-{i}")).collect();
    let cpu_before = cluster.function_cpu();
    let calls_before = crossplane_calls()?;
    let spec = spec(cluster);
    let documents: Vec<String> = names
        .iter()
        .map(|name| manifest(cluster, name, &spec))
        .collect();
    let start = Instant::now();
    cluster.apply(&documents.join("---\n"))?;
    wait_for(
        &format!("{count} XProbes ready"),
        Duration::from_mins(10),
        || {
            let text = on_xprobes(cluster, &["get", "xprobes", "-o", "json"])?;
            let list: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
            let ready = list["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|item| {
                    item["metadata"]["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("load-"))
                        && is(item, "Ready", "True")
                        && is(item, "Synced", "True")
                })
                .count();
            if ready == count {
                Ok(Some(()))
            } else {
                Err(format!("{ready} of {count} ready"))
            }
        },
    )?;
    let all_ready = start.elapsed();
    let calls = crossplane_calls()? - calls_before;
    let cpu = cluster.function_cpu().checked_sub(cpu_before).unwrap();
    let rss_mib = cluster.function_rss_mib();
    // Settled: nothing more until Crossplane's poll interval.
    std::thread::sleep(Duration::from_secs(20));
    let later = crossplane_calls()? - calls_before - calls;
    delete_all(cluster)?;
    Ok(Run {
        count,
        all_ready,
        calls,
        later,
        cpu,
        rss_mib,
    })
}
