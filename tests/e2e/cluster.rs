//! The live control plane `scripts/cluster.sh` runs, and the calls the
//! cases make to it: kubectl with the cluster's kubeconfig, waits, and the
//! PIDs of every process the script started.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Two function processes, as a Deployment with two replicas: Crossplane
/// dials the headless Service's name, which resolves to both.
const FUNCTION_ADDRESSES: &str = "127.0.0.2 127.0.0.3";

/// Crossplane's metrics (scripts/cluster.sh's `CROSSPLANE_METRICS_PORT`).
const CROSSPLANE_METRICS: &str = "http://127.0.0.1:18080/metrics";

/// The Crossplane the suite runs unless `CROSSPLANE_VERSION` names
/// another (scripts/cluster.sh builds that one).
pub const CROSSPLANE_VERSION: &str = "v2.3.4";

pub struct Cluster {
    root: PathBuf,
    kubectl: PathBuf,
    kubeconfig: PathBuf,
    dir: PathBuf,
    version: String,
    /// The packages installed first, comma-separated, and the flags.
    packages: String,
    flags: Vec<String>,
}

/// The outcome of a step: a message naming what went wrong.
pub type Step<T = ()> = Result<T, String>;

impl Cluster {
    /// The control plane up and the packages (one per platform) installed
    /// as the Function, one multi-platform package, its binary run with
    /// `flags` as the DeploymentRuntimeConfig passes them.
    pub fn up(root: &Path, packages: &[PathBuf], flags: &[&str]) -> Step<Cluster> {
        let dir = root.join("target/cluster");
        let gopath = output(Command::new("go").args(["env", "GOPATH"]))?;
        let tools = PathBuf::from(gopath.trim()).join("bin/function-starlark-cluster");
        let cluster = Cluster {
            root: root.to_path_buf(),
            kubectl: tools.join("kubectl"),
            kubeconfig: dir.join("admin.kubeconfig"),
            dir,
            version: crossplane_version(),
            packages: packages
                .iter()
                .map(|p| p.to_str().ok_or("a package path is not UTF-8"))
                .collect::<Result<Vec<_>, _>>()?
                .join(","),
            flags: flags.iter().map(ToString::to_string).collect(),
        };
        // A fresh control plane: what an earlier run left in etcd would
        // answer for this one.
        cluster.script(&["down"])?;
        if cluster.dir.exists() {
            std::fs::remove_dir_all(&cluster.dir)
                .map_err(|e| format!("removing {}: {e}", cluster.dir.display()))?;
        }
        cluster.script(&["up"])?;
        cluster.install(&cluster.packages, None)?;
        Ok(cluster)
    }

    /// The packages the suite installed first, comma-separated.
    pub fn packages(&self) -> &str {
        &self.packages
    }

    /// Installs `packages` (comma-separated) under `tag` (the version's
    /// own by default) with the suite's flags: the Function moves to them,
    /// as an upgrade or a downgrade does.
    pub fn install(&self, packages: &str, tag: Option<&str>) -> Step {
        let mut args = vec!["install", packages];
        args.extend(self.flags.iter().map(String::as_str));
        self.script_with(&args, tag.map(|tag| ("PACKAGE_TAG", tag)))
    }

    /// The cluster's state directory (target/cluster).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The Crossplane version the control plane runs.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Whether it is a Crossplane 1.x: claims and cluster-scoped XRs only,
    /// `apiextensions.crossplane.io/v1beta1` Usages, no Operations.
    pub fn legacy(&self) -> bool {
        self.version.starts_with("v1.")
    }

    pub fn script(&self, args: &[&str]) -> Step {
        self.script_with(args, None)
    }

    /// `scripts/cluster.sh args`, with one more environment variable.
    fn script_with(&self, args: &[&str], env: Option<(&str, &str)>) -> Step {
        let mut command = Command::new("bash");
        command
            .arg(self.root.join("scripts/cluster.sh"))
            .args(args)
            .env("FUNCTION_ADDRESSES", FUNCTION_ADDRESSES)
            .env("CROSSPLANE_VERSION", &self.version)
            .current_dir(&self.root);
        if let Some((key, value)) = env {
            command.env(key, value);
        }
        let status = command
            .status()
            .map_err(|e| format!("scripts/cluster.sh: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!(
                "scripts/cluster.sh {} failed ({status})",
                args.join(" ")
            ))
        }
    }

    pub fn kubectl(&self, args: &[&str]) -> Step<String> {
        output(&mut self.command(args))
    }

    /// Applies YAML documents given as text.
    pub fn apply(&self, yaml: &str) -> Step {
        let mut child = self
            .command(&["apply", "-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("kubectl: {e}"))?;
        child
            .stdin
            .take()
            .expect("stdin is piped")
            .write_all(yaml.as_bytes())
            .map_err(|e| format!("kubectl apply: {e}"))?;
        let out = child
            .wait_with_output()
            .map_err(|e| format!("kubectl apply: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "kubectl apply: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    pub fn json(&self, args: &[&str]) -> Step<Value> {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        let text = self.kubectl(&all)?;
        serde_json::from_str(&text).map_err(|e| format!("kubectl {}: {e}", args.join(" ")))
    }

    /// The processes the script started, by name, from its PID files.
    pub fn pids(&self) -> Vec<(String, u32)> {
        let Ok(entries) = std::fs::read_dir(self.dir.join("pids")) else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let pid = std::fs::read_to_string(entry.path())
                    .ok()?
                    .trim()
                    .parse()
                    .ok()?;
                Some((entry.file_name().to_string_lossy().into_owned(), pid))
            })
            .collect()
    }

    /// What each function process has logged, by process name.
    pub fn function_logs_by_process(&self) -> Vec<(String, String)> {
        let Ok(entries) = std::fs::read_dir(self.dir.join("logs")) else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                let process = name.strip_prefix("function-")?.strip_suffix(".log")?;
                let log = std::fs::read_to_string(entry.path()).ok()?;
                Some((format!("function-{process}"), log))
            })
            .collect()
    }

    /// The function processes running now, by name, with their PIDs.
    pub fn function_pids(&self) -> Vec<(String, u32)> {
        let mut pids: Vec<(String, u32)> = self
            .pids()
            .into_iter()
            .filter(|(name, pid)| name.starts_with("function-") && is_alive(*pid))
            .collect();
        pids.sort();
        pids
    }

    /// Kills a function process outright, as a node failure would.
    pub fn kill_function(&self, process: &str) -> Step {
        let (_, pid) = self
            .function_pids()
            .into_iter()
            .find(|(name, _)| name == process)
            .ok_or_else(|| format!("no running {process}"))?;
        output(Command::new("kill").args(["-KILL", &pid.to_string()]))?;
        wait_for(&format!("{process} gone"), Duration::from_secs(10), || {
            Ok((!is_alive(pid)).then_some(()))
        })
    }

    /// CPU time the function's processes and their workers have used.
    pub fn function_cpu(&self) -> Duration {
        let ticks: u64 = self
            .function_processes()
            .iter()
            .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
            .map(|stat| {
                // utime, stime, and cutime, cstime (workers that exited
                // and were reaped): fields 14 to 17, after the command's ')'.
                let rest = stat.rsplit(')').next().unwrap_or_default();
                let fields: Vec<&str> = rest.split_whitespace().collect();
                (11..15)
                    .filter_map(|i| fields.get(i)?.parse::<u64>().ok())
                    .sum::<u64>()
            })
            .sum();
        // USER_HZ is 100 on Linux.
        Duration::from_millis(ticks * 10)
    }

    /// Resident memory of the function's processes and their workers.
    pub fn function_rss_mib(&self) -> f64 {
        self.function_processes()
            .iter()
            .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
            .filter_map(|status| {
                let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
                line.split_whitespace().nth(1)?.parse::<f64>().ok()
            })
            .sum::<f64>()
            / 1024.0
    }

    /// The function's servers and every worker process they started, of
    /// every revision installed, or the stand-in serving in their place
    /// (`scripts/cluster.sh stand-in`).
    fn function_processes(&self) -> Vec<u32> {
        let revisions = self.dir.join("functions/function-starlark/revisions");
        let stand_in = self.dir.join("functions/function-starlark/stand-in");
        let binary = |exe: &Path| {
            exe == stand_in
                || (exe.starts_with(&revisions) && exe.ends_with("rootfs/function-starlark"))
        };
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| binary(&exe))
            })
            .collect()
    }

    /// Writes `status` through the status subresource of `object` (which
    /// names its apiVersion, kind, name and namespace), as a controller
    /// reports what it observed.
    pub fn patch_status(&self, object: &Value, status: &Value) -> Step {
        let resource = resource_of(
            object["apiVersion"].as_str().unwrap_or_default(),
            object["kind"].as_str().unwrap_or_default(),
        );
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let patch = serde_json::json!({ "status": status }).to_string();
        let mut args = vec![
            "patch",
            &resource,
            name,
            "--subresource",
            "status",
            "--type",
            "merge",
            "-p",
            &patch,
        ];
        let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
        if !namespace.is_empty() {
            args.extend(["-n", namespace]);
        }
        self.kubectl(&args).map(|_| ())
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.kubectl);
        command.arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        command
    }
}

fn output(command: &mut Command) -> Step<String> {
    let out = command.output().map_err(|e| format!("{command:?}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{:?} failed: {}",
            command.get_args().collect::<Vec<_>>(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Polls `check` until it gives a value or `limit` passes; the error names
/// what was awaited and the last thing `check` saw.
pub fn wait_for<T>(
    what: &str,
    limit: Duration,
    mut check: impl FnMut() -> Step<Option<T>>,
) -> Step<T> {
    let start = Instant::now();
    let mut last = String::from("nothing yet");
    loop {
        match check() {
            Ok(Some(value)) => return Ok(value),
            Ok(None) => {}
            Err(e) => last = e,
        }
        if start.elapsed() > limit {
            return Err(format!("{what}: not within {limit:?} (last: {last})"));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The status of the condition `kind` in an object's status, if it has one.
pub fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

pub fn is_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z'))
        })
}

/// The first address the function listens on.
/// `CROSSPLANE_VERSION`, or [`CROSSPLANE_VERSION`].
pub fn crossplane_version() -> String {
    std::env::var("CROSSPLANE_VERSION")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| CROSSPLANE_VERSION.to_owned())
}

pub fn function_address() -> &'static str {
    FUNCTION_ADDRESSES.split(' ').next().unwrap_or_default()
}

/// The RunFunction requests Crossplane has sent the function, by its
/// own count (`function_run_function_request_total`, every revision's):
/// whichever binary serves, the Go implementation included, which logs
/// no line per call.
pub fn crossplane_calls() -> Step<usize> {
    let text = output(Command::new("curl").args(["-sf", CROSSPLANE_METRICS]))?;
    let total: f64 = text
        .lines()
        .filter(|line| {
            line.starts_with("function_run_function_request_total{")
                && line.contains(r#"function_name="function-starlark""#)
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    // A counter of whole requests.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(total as usize)
}

/// RunFunction calls for the XR `name` in one process's log.
pub fn calls_in(log: &str, name: &str) -> usize {
    log.lines().filter(|line| xr_of(line) == Some(name)).count()
}

/// RunFunction calls so far for the XRs whose names start with `prefix`,
/// over every function process.
pub fn calls_for_xrs(cluster: &Cluster, prefix: &str) -> usize {
    cluster
        .function_logs_by_process()
        .iter()
        .flat_map(|(_, log)| calls_by_xr(log).into_iter())
        .filter(|(xr, _)| xr.starts_with(prefix))
        .map(|(_, calls)| calls)
        .sum()
}

/// RunFunction calls in one process's log, by XR name, read in one pass
/// (the load test counts 200 XRs in logs of megabytes).
pub fn calls_by_xr(log: &str) -> HashMap<&str, usize> {
    let mut calls = HashMap::new();
    for xr in log.lines().filter_map(xr_of) {
        *calls.entry(xr).or_insert(0) += 1;
    }
    calls
}

/// The XR a log line names: the handler logs one line per call naming it,
/// as JSON (`"xr_name":"photos"`) or, under `--debug`, as coloured text
/// (`xr_name=photos`, the value maybe quoted, the key maybe wrapped in
/// colour codes).
fn xr_of(line: &str) -> Option<&str> {
    let at = line.find("xr_name")?;
    let rest = &line[at + "xr_name".len()..];
    // Past the key's closing quote or colour code, the separator and any
    // colour code or quote before the value.
    let start = rest.find(['=', ':'])? + 1;
    let rest = rest[start..].trim_start_matches(['"', '\\']);
    let rest = skip_ansi(rest).trim_start_matches(['"', '\\']);
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '-' || c == '.'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// `text` past a leading ANSI colour code, if it starts with one.
fn skip_ansi(text: &str) -> &str {
    match text.strip_prefix('\u{1b}') {
        Some(code) => code
            .find(|c: char| c.is_ascii_alphabetic())
            .map_or("", |end| &code[end + 1..]),
        None => text,
    }
}

/// `kind.group` for an apiVersion and kind, as kubectl names a resource.
pub fn resource_of(api_version: &str, kind: &str) -> String {
    let kind = kind.to_lowercase();
    match api_version.split_once('/') {
        Some((group, _)) => format!("{kind}.{group}"),
        None => kind,
    }
}

/// What an XR composed: under `spec.crossplane` for a v2 XR, under `spec`
/// for a legacy cluster-scoped one.
pub fn resource_refs(xr: &serde_json::Value) -> &serde_json::Value {
    let v2 = &xr["spec"]["crossplane"]["resourceRefs"];
    if v2.is_null() {
        &xr["spec"]["resourceRefs"]
    } else {
        v2
    }
}
