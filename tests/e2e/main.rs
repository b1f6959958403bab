//! End to end on a live Crossplane control plane. `scripts/cluster.sh`
//! starts etcd, kube-apiserver, kube-controller-manager and Crossplane on
//! loopback, installs the packages `scripts/test.sh` builds
//! (target/package/{amd64,arm64}/function-starlark.xpkg), pushed as one
//! multi-platform package, through a `pkg.crossplane.io/v1 Function` and a
//! DeploymentRuntimeConfig carrying flags, and runs the binary of this
//! machine's platform's image its Deployment names, with that Deployment's
//! arguments and certificates. The cases drive real reconciles and read
//! what the API server holds; a stand-in provider (provider.rs) marks
//! managed resources ready as a cloud provider would. At the end the
//! control plane is stopped and every process it ran must be gone.
//!
//! It needs root (the script maps the function's Service name in
//! /etc/hosts), Go, openssl, curl and the package. It runs with `E2E=1`
//! (scripts/test.sh sets it under `CI=true`, after the other tests), where
//! anything missing fails it; elsewhere it says why it was skipped, since
//! it takes over /etc/hosts and a handful of ports.

mod cluster;
mod examples;
mod legacy;
mod load;
mod operations;
mod provider;
mod scenarios;
mod upgrade;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

use cluster::{Cluster, is_alive};
use provider::Provider;

/// Cases running at once: most wait on reconciles and the garbage
/// collector far more than they use the CPU.
const PARALLEL: usize = 5;

/// Flags the DeploymentRuntimeConfig passes, as a user would set them;
/// `E2E_FLAGS` adds more (to compare engine settings under load).
const FLAGS: &[&str] = &["--timeout-seconds", "30"];

type Scenario = fn(&Cluster) -> cluster::Step<String>;

/// The Crossplanes a case runs on; the others skip it by name, saying why.
#[derive(Clone, Copy)]
enum Runs {
    Everywhere,
    /// Only on Crossplane v2, for the reason given.
    V2(&'static str),
    /// Only on Crossplane 1.x, for the reason given.
    V1(&'static str),
}

impl Runs {
    /// Why `cluster` skips the case, if it does.
    fn skipped_on(self, cluster: &Cluster) -> Option<&'static str> {
        match self {
            Runs::Everywhere => None,
            Runs::V2(why) => cluster.legacy().then_some(why),
            Runs::V1(why) => (!cluster.legacy()).then_some(why),
        }
    }
}

/// The scenarios that run beside the examples and each other.
const SCENARIOS: &[(&str, Scenario, Runs)] = &[
    (
        "what_the_script_sets_is_what_the_cluster_holds",
        scenarios::what_the_script_sets_is_what_the_cluster_holds,
        Runs::Everywhere,
    ),
    (
        "a_failing_script_keeps_what_it_composed_and_recovers",
        scenarios::a_failing_script_keeps_what_it_composed_and_recovers,
        Runs::Everywhere,
    ),
    (
        "a_response_ttl_requeues_and_a_settled_xr_is_left_alone",
        scenarios::a_response_ttl_requeues_and_a_settled_xr_is_left_alone,
        Runs::Everywhere,
    ),
    (
        "a_client_without_crossplanes_certificate_is_refused",
        scenarios::a_client_without_crossplanes_certificate_is_refused,
        Runs::Everywhere,
    ),
    (
        "operations_run_through_the_installed_package",
        operations::operations_run_through_the_installed_package,
        Runs::V2("Crossplane 1.x has no Operations"),
    ),
    (
        "a_claim_composes_through_its_xr",
        legacy::a_claim_composes_through_its_xr,
        Runs::V1("the v2 probe is a namespaced XR, which has no claim"),
    ),
    (
        "v1_usages_protect_what_depends_on_them",
        legacy::v1_usages_protect_what_depends_on_them,
        Runs::V1(
            "Usages protect only through Crossplane's webhook, which the v2 control plane runs without",
        ),
    ),
];

/// The scenarios that run after everything else, one at a time: they kill
/// or replace the function's processes.
const ALONE: &[(&str, Scenario, Runs)] = &[
    (
        "replicas_share_calls_and_dying_ones_lose_nothing",
        scenarios::replicas_share_calls_and_dying_ones_lose_nothing,
        Runs::Everywhere,
    ),
    (
        "an_upgrade_and_a_downgrade_keep_every_composed_resource",
        upgrade::an_upgrade_and_a_downgrade_keep_every_composed_resource,
        Runs::V2(
            "Crossplane 1.x names composed resources at random and may compose from a stale copy of the XR, so a burst of reconciles composes some again under new names (crossplane/crossplane#6631; 24 of 100 through one upgrade on v1.20.1)",
        ),
    ),
];

/// What one of the suite's threads takes on.
enum Task {
    /// Examples that run one after the other ([`examples::groups`]).
    Examples(Vec<PathBuf>),
    Scenario(&'static str, Scenario),
}

fn main() -> ExitCode {
    START.get_or_init(Instant::now);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let required = std::env::var("E2E").as_deref() == Ok("1");
    let packages: Vec<PathBuf> = ["amd64", "arm64"]
        .iter()
        .map(|arch| root.join(format!("target/package/{arch}/function-starlark.xpkg")))
        .collect();
    if !required {
        println!(
            "e2e: skipped; set E2E=1 to run it (it starts a control plane on loopback and edits /etc/hosts)"
        );
        return ExitCode::SUCCESS;
    }
    if let Err(missing) = prerequisites(&packages) {
        eprintln!("e2e: cannot run: {missing}");
        return ExitCode::FAILURE;
    }
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let selected =
        |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));

    let extra = std::env::var("E2E_FLAGS").unwrap_or_default();
    let flags: Vec<&str> = FLAGS
        .iter()
        .copied()
        .chain(extra.split_whitespace())
        .collect();
    let cluster = match Cluster::up(&root, &packages, &flags) {
        Ok(cluster) => &*Box::leak(Box::new(cluster)),
        Err(e) => {
            eprintln!("e2e: the control plane did not come up: {e}");
            let _ = Command::new("bash")
                .arg(root.join("scripts/cluster.sh"))
                .arg("down")
                .status();
            return ExitCode::FAILURE;
        }
    };

    println!(
        "e2e: the control plane is up, Crossplane {} [{}]",
        cluster.version(),
        since_start()
    );
    let mut passed = 0;
    let mut failed = Vec::new();
    let mut skipped = 0;
    let mut skip = |name: String, why: &str| {
        println!(
            "test {name} ... skipped on Crossplane {}: {why}",
            cluster.version()
        );
        skipped += 1;
    };
    let mut dirs = Vec::new();
    for dir in example_dirs(&root) {
        let name = format!("examples::{}", dir.file_name().unwrap().to_string_lossy());
        if !selected(&name) {
            continue;
        }
        match examples::skipped_on(cluster, &dir) {
            Ok(None) => dirs.push(dir),
            Ok(Some(why)) => skip(name, why),
            Err(e) => failed.push(format!("{name}: {e}")),
        }
    }
    let mut selected_scenarios = |list: &'static [(&'static str, Scenario, Runs)]| {
        let mut chosen = Vec::new();
        for (name, scenario, runs) in list {
            let name_in_full = format!("scenarios::{name}");
            if !selected(&name_in_full) {
                continue;
            }
            match runs.skipped_on(cluster) {
                Some(why) => skip(name_in_full, why),
                None => chosen.push((*name, *scenario)),
            }
        }
        chosen
    };
    let (mut beside, mut alone) = (selected_scenarios(SCENARIOS), selected_scenarios(ALONE));
    if !(beside.is_empty() && alone.is_empty())
        && let Err(e) = scenarios::install(cluster)
    {
        failed.push(format!("scenarios: the probe's definitions: {e}"));
        (beside, alone) = (Vec::new(), Vec::new());
    }
    let mut tasks: Vec<Task> = Vec::new();
    let mut provider = None;
    if !dirs.is_empty() {
        match examples::preinstall(cluster, &dirs).and_then(|kinds| {
            let groups = examples::groups(&dirs)?;
            Ok((kinds, groups))
        }) {
            Ok((mut kinds, mut groups)) => {
                // Deployments report Available once their pods run;
                // nothing runs pods here, so the provider stands in for
                // that too.
                kinds.push("deployments.apps".into());
                provider = Some(Provider::start(cluster, kinds, Duration::from_secs(1)));
                // The longest groups first: tasks are taken from the end.
                groups.sort_by_key(Vec::len);
                tasks.extend(groups.into_iter().map(Task::Examples));
            }
            Err(e) => failed.push(format!("examples: {e}")),
        }
    }
    // The scenarios before the examples: they wait longest.
    tasks.extend(
        beside
            .into_iter()
            .map(|(name, scenario)| Task::Scenario(name, scenario)),
    );
    run_all(cluster, provider.as_ref(), tasks, &mut passed, &mut failed);
    drop(provider);
    for (name, scenario) in alone {
        record(
            format!("scenarios::{name}"),
            scenario(cluster),
            &mut passed,
            &mut failed,
        );
    }

    // The load test runs only when asked for by name: three runs of 200
    // XRs take minutes.
    if filter.iter().any(|f| f == "load") {
        load_test(cluster, &mut passed, &mut failed);
    }

    let pids = cluster.pids();
    if let Err(e) = cluster.script(&["down"]) {
        failed.push(format!("down: {e}"));
    }
    let left: Vec<String> = pids
        .iter()
        .filter(|(_, pid)| is_alive(*pid))
        .map(|(name, pid)| format!("{name} ({pid})"))
        .collect();
    if pids.is_empty() {
        failed.push("down: the script recorded no processes".into());
    } else if !left.is_empty() {
        failed.push(format!("down left running: {}", left.join(", ")));
    }

    let verdict = if failed.is_empty() { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {verdict}. {passed} passed; {} failed; {skipped} ignored (Crossplane {}); finished in {}",
        failed.len(),
        cluster.version(),
        since_start()
    );
    for failure in &failed {
        println!("    {failure}");
    }
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Runs the tasks [`PARALLEL`] at a time, taking them from the end of
/// the list, and records each case's outcome as it comes.
fn run_all(
    cluster: &'static Cluster,
    provider: Option<&Provider>,
    tasks: Vec<Task>,
    passed: &mut usize,
    failed: &mut Vec<String>,
) {
    let queue = Mutex::new(tasks);
    let (done, outcomes) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..PARALLEL {
            let (queue, done) = (&queue, done.clone());
            scope.spawn(move || {
                loop {
                    let task = queue.lock().expect("the suite's tasks").pop();
                    match task {
                        None => break,
                        Some(Task::Scenario(name, scenario)) => {
                            let _ = done.send((format!("scenarios::{name}"), scenario(cluster)));
                        }
                        Some(Task::Examples(group)) => {
                            let provider = provider.expect("examples run with the provider");
                            for dir in group {
                                let _ = done.send(example(cluster, provider, &dir));
                            }
                        }
                    }
                }
            });
        }
        drop(done);
        for (name, outcome) in outcomes {
            record(name, outcome, passed, failed);
        }
    });
}

fn example(
    cluster: &'static Cluster,
    provider: &Provider,
    dir: &Path,
) -> (String, cluster::Step<String>) {
    let name = format!("examples::{}", dir.file_name().unwrap().to_string_lossy());
    let outcome = examples::converge(cluster, provider, dir).map(|done| {
        format!(
            "{} calls, {:.1} s to settle",
            done.calls,
            done.wall.as_secs_f64()
        )
    });
    (name, outcome)
}

/// Prints a case's outcome as libtest does and counts it.
fn record(
    name: String,
    outcome: cluster::Step<String>,
    passed: &mut usize,
    failed: &mut Vec<String>,
) {
    match outcome {
        Ok(summary) => {
            println!("test {name} ... ok ({summary}) [{}]", since_start());
            *passed += 1;
        }
        Err(e) => {
            println!("test {name} ... FAILED [{}]\n    {e}", since_start());
            failed.push(name);
        }
    }
}

/// Seconds since the suite started, to see where its time goes.
fn since_start() -> String {
    format!(
        "{:.0} s",
        START.get_or_init(Instant::now).elapsed().as_secs_f64()
    )
}

static START: OnceLock<Instant> = OnceLock::new();

fn prerequisites(packages: &[PathBuf]) -> Result<(), String> {
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .map_err(|e| format!("id -u: {e}"))?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Err(
            "the suite needs root: scripts/cluster.sh maps the function's name in /etc/hosts"
                .into(),
        );
    }
    for tool in ["go", "openssl", "curl"] {
        if Command::new(tool).arg("version").output().is_err() {
            return Err(format!("{tool} is not installed"));
        }
    }
    if let Some(missing) = packages.iter().find(|p| !p.exists()) {
        return Err(format!(
            "no package at {}: run package/build.sh (scripts/test.sh does)",
            missing.display()
        ));
    }
    Ok(())
}

fn example_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("examples"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                // Compositions: the operation examples are Operations'.
                .filter(|p| p.join("composition.yaml").exists())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// The load test (load.rs): `E2E_LOAD_RUNS` runs (3) of `E2E_LOAD_XRS`
/// XRs (200), served by the installed package or, with `E2E_THIS`, by the
/// binary it names (a release build) in the installed one's place; with
/// `E2E_PEER` (the Go implementation's binary), as many runs served by it
/// and the two compared.
fn load_test(cluster: &Cluster, passed: &mut usize, failed: &mut Vec<String>) {
    let setting = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(default)
    };
    let count = setting("E2E_LOAD_XRS", 200);
    let runs = setting("E2E_LOAD_RUNS", 3);
    let binary = |name: &str| std::env::var(name).ok().filter(|p| !p.is_empty());
    let (this, peer) = (binary("E2E_THIS"), binary("E2E_PEER"));
    // A stand-in serves the warm-up too: its connections are up before
    // the load arrives.
    let mut ready = scenarios::install(cluster);
    if let Some(binary) = &this {
        ready = ready.and_then(|()| cluster.script(&["stand-in", binary]));
    }
    let ready = ready.and_then(|()| load::warm_up(cluster));
    // The first burst of XRs on the kind draws several times the calls of
    // the next ones, whichever implementation serves it (measured with
    // each first): it is reported, held to nothing and compared to nothing.
    let first = ready.clone().and_then(|()| load::measure(cluster, count));
    record(
        "scenarios::load (the first burst, not held or compared)".into(),
        first.map(|run| run.to_string()),
        passed,
        failed,
    );
    // `runs` measured runs named after `side`, each recorded as `judge`
    // says; the runs measured, every one, for the comparison.
    let mut series =
        |side: &str, ready: &cluster::Step, judge: fn(&load::Run) -> cluster::Step<String>| {
            let mut measured_runs = Vec::new();
            for run in 1..=runs {
                let measured = ready.clone().and_then(|()| load::measure(cluster, count));
                measured_runs.extend(measured.as_ref().ok().cloned());
                let name = format!("scenarios::load{side} (run {run} of {runs})");
                record(name, measured.and_then(|run| judge(&run)), passed, failed);
            }
            measured_runs
        };
    let ours = series("", &ready, load::held);
    if let Some(peer) = &peer {
        let ready = cluster
            .script(&["stand-in", peer])
            .and_then(|()| load::warm_up(cluster));
        let peers = series(", the Go implementation", &ready, |run| Ok(run.to_string()));
        let compared = load::side_by_side(&ours, &peers);
        record(
            "scenarios::load, side by side".into(),
            compared,
            passed,
            failed,
        );
    }
    if (this.is_some() || peer.is_some())
        && let Err(e) = cluster.script(&["stand-in"])
    {
        failed.push(format!("stand-in: {e}"));
    }
}
