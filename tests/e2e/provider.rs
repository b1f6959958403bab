//! A stand-in provider: what a cloud provider does to the managed resources
//! a composition creates, without the cloud. Every resource of the kinds it
//! watches gets `Synced=True` and `Ready=True` in its status a while after
//! it first appears, so readiness, `depends_on` sequencing and gating play
//! out over several reconciles as they would against AWS. What the cloud
//! would report besides (an ARN, a project number) comes from the
//! example's `observed.yaml`, by the XR that composed the resource and its
//! composition resource name.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cluster::{Cluster, condition};

/// What the cloud reports, by XR name, then by composition resource name.
type Reports = HashMap<String, HashMap<String, Value>>;

pub struct Provider {
    stop: Arc<AtomicBool>,
    reports: Arc<Mutex<Reports>>,
    thread: Option<JoinHandle<()>>,
}

impl Provider {
    /// Watches `kinds` (`plural.group`), marking each resource ready
    /// `delay` after it is first seen. One `kubectl get` a second lists
    /// them all, for every example at once: the control plane shares two
    /// cores with the suite.
    pub fn start(cluster: &'static Cluster, kinds: Vec<String>, delay: Duration) -> Provider {
        let stop = Arc::new(AtomicBool::new(false));
        let reports = Arc::new(Mutex::new(Reports::new()));
        let (flag, shared) = (stop.clone(), reports.clone());
        let thread = std::thread::spawn(move || {
            let mut seen: HashMap<String, Instant> = HashMap::new();
            let kinds = kinds.join(",");
            while !flag.load(Ordering::Relaxed) {
                mark_ready(cluster, &kinds, &shared, delay, &mut seen);
                std::thread::sleep(Duration::from_secs(1));
            }
        });
        Provider {
            stop,
            reports,
            thread: Some(thread),
        }
    }

    /// What the cloud reports for the resources the XR `xr` composes,
    /// by composition resource name; replaces what an earlier XR of that
    /// name had.
    pub fn report(&self, xr: &str, reported: HashMap<String, Value>) {
        self.reports
            .lock()
            .expect("the provider's reports")
            .insert(xr.to_string(), reported);
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn mark_ready(
    cluster: &Cluster,
    kinds: &str,
    reports: &Mutex<Reports>,
    delay: Duration,
    seen: &mut HashMap<String, Instant>,
) {
    let Ok(list) = cluster.json(&["get", kinds, "--all-namespaces"]) else {
        return;
    };
    for item in list["items"].as_array().into_iter().flatten() {
        let uid = item["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let first = *seen.entry(uid).or_insert_with(Instant::now);
        let ready = condition(item, "Ready").is_some_and(|c| c["status"] == "True");
        if ready || first.elapsed() < delay {
            continue;
        }
        let name = item["metadata"]["name"].as_str().unwrap_or_default();
        let now = "2026-01-01T00:00:00Z";
        let metadata = &item["metadata"];
        let xr = metadata["labels"]["crossplane.io/composite"]
            .as_str()
            .unwrap_or_default();
        let key = metadata["annotations"]["crossplane.io/composition-resource-name"]
            .as_str()
            .unwrap_or_default();
        let reported = reports
            .lock()
            .expect("the provider's reports")
            .get(xr)
            .and_then(|by_key| by_key.get(key))
            .cloned();
        let mut status =
            reported.unwrap_or_else(|| serde_json::json!({"atProvider": {"id": name}}));
        status["conditions"] = serde_json::json!([
            {"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": now},
            {"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": now},
            // What a Deployment's controller reports once its pods run.
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastTransitionTime": now},
        ]);
        let _ = cluster.patch_status(item, &status);
    }
}
