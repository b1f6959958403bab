//! `count` XRs created at once: how many calls and how long it takes them
//! all to be ready, what the function spent, and that settled XRs are left
//! alone afterwards. Run on its own (`-- load`), three times in a row for
//! the numbers docs/live-control-plane.md gives; with `E2E_THIS`, another
//! build of this function (a release build) serves them in the installed
//! one's place (`scripts/cluster.sh stand-in`).

use std::fmt;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cluster::{Cluster, Step, calls_for_xrs, wait_for};
use crate::scenarios::{
    create, delete, delete_all, expect, is, manifest, on_xprobes, ratio, wait_ready,
};

/// One load run's readings.
struct Run {
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
    create(cluster, "warm-up", r"{greeting: hello}")?;
    wait_ready(cluster, "warm-up", Duration::from_mins(1))?;
    delete(cluster, "warm-up", &["--wait=true", "--timeout=60s"])
}

/// A load run, held to what is asked of the function: at most 7 calls
/// per XR and settled XRs left alone.
pub fn load(cluster: &Cluster, count: usize) -> Step<String> {
    let run = measure(cluster, count)?;
    let summary = run.to_string();
    let seen = Value::String(summary.clone());
    expect(run.per_xr() <= 7.0, "at most 7 calls per XR", &seen)?;
    expect(run.later <= count / 50, "settled XRs left alone", &seen)?;
    Ok(summary)
}

fn measure(cluster: &Cluster, count: usize) -> Step<Run> {
    let names: Vec<String> = (0..count).map(|i| format!("load-{i}")).collect();
    let cpu_before = cluster.function_cpu();
    let calls_before = calls_for_xrs(cluster, "load-");
    let documents: Vec<String> = names
        .iter()
        .map(|name| manifest(cluster, name, "{greeting: hello}"))
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
    let calls = calls_for_xrs(cluster, "load-") - calls_before;
    let cpu = cluster.function_cpu().checked_sub(cpu_before).unwrap();
    let rss_mib = cluster.function_rss_mib();
    // Settled: nothing more until Crossplane's poll interval.
    std::thread::sleep(Duration::from_secs(20));
    let later = calls_for_xrs(cluster, "load-") - calls_before - calls;
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
