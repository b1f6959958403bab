//! How fast the editor hears back: `cargo bench --bench editor` starts
//! `function-starlark lsp` (the bench profile's binary), opens a 2,000-line
//! script and times, from the client's side, the diagnostics after each
//! change (every `check` finding of the whole file) and completion at the
//! end of the file; then, on the largest provider the module proxy serves
//! (provider-aws v0.52.0, 199 CRDs), `gen`'s time and peak memory, and the
//! same two measures on a 2,000-line script of constructor calls that loads
//! its modules (completion inside a constructor's call). Prints one table.

#[allow(dead_code)]
#[path = "../tests/it/common/framed.rs"]
mod framed;
#[path = "../tests/it/common/lsp_client.rs"]
mod lsp_client;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use lsp_client::Client;
use serde_json::Value;

/// Changes and completions timed.
const ROUNDS: usize = 40;

/// A 2,000-line script: helpers, loads, and Resource() calls with bodies.
fn script(salt: usize) -> String {
    let mut out = String::from(
        "load(\"starlark-stdlib:v1/naming.star\", \"resource_name\")\nload(\"starlark-stdlib:v1/labels.star\", \"crossplane_labels\")\n\n",
    );
    let mut n = 0;
    while out.lines().count() < 2000 {
        let _ = write!(
            out,
            "def bucket_{n}(region, tier = \"standard\"):\n    \"\"\"Bucket {n} of the set ({salt}).\"\"\"\n    name = resource_name(\"bucket-{n}\")\n    labels = crossplane_labels()\n    body = {{\n        \"apiVersion\": \"s3.aws.upbound.io/v1beta1\",\n        \"kind\": \"Bucket\",\n        \"metadata\": {{\"labels\": labels}},\n        \"spec\": {{\"forProvider\": {{\"region\": region, \"tags\": {{\"tier\": tier}}}}}},\n    }}\n    return Resource(name, body, ready = None)\n\nbucket_{n}(get(oxr, \"spec.region\", \"eu-west-1\"))\n\n"
        );
        n += 1;
    }
    out
}

/// The largest provider's CRDs, downloaded as a Go module.
fn provider_crds() -> Option<PathBuf> {
    let out = Command::new("go")
        .args([
            "mod",
            "download",
            "-json",
            "github.com/crossplane-contrib/provider-aws@v0.52.0",
        ])
        .output()
        .ok()?;
    let json: Value = serde_json::from_slice(&out.stdout).ok()?;
    Some(PathBuf::from(json["Dir"].as_str()?).join("package/crds"))
}

/// `gen crd` of `crds` into `out`: its wall time and peak resident memory
/// (KiB, its high-water mark read until it exits).
fn generate(crds: &Path, out: &Path) -> (Duration, u64) {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_function-starlark"))
        .args(["gen", "crd"])
        .arg(crds)
        .arg("-o")
        .arg(out)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("gen starts");
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Some(hwm) = std::fs::read_to_string(&status).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
        }) {
            peak = peak.max(hwm);
        }
        if child.try_wait().expect("gen runs").is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    (started.elapsed(), peak)
}

/// A 2,000-line script of constructor calls, loading the generated
/// modules (the largest one whole, with a star).
fn typed_script(salt: usize) -> String {
    let mut out = String::from(
        "load(\"./schemas/ec2.aws.crossplane.io/v1beta1.star\", \"VPC\", \"VPCSpec\", \"VPCSpecForProvider\")\n\
         load(\"./schemas/ec2.aws.crossplane.io/v1alpha1.star\", \"*\")\n\n",
    );
    let mut n = 0;
    while out.lines().count() < 2000 {
        let _ = write!(
            out,
            "def network_{n}(region):\n    \"\"\"Network {n} ({salt}).\"\"\"\n    vpc = VPC(spec = VPCSpec(\n        forProvider = VPCSpecForProvider(region = region, cidrBlock = \"10.{n}.0.0/16\"),\n        deletionPolicy = \"Delete\",\n    ))\n    return Resource(\"vpc-{n}\", vpc)\n\nnetwork_{n}(get(oxr, \"spec.region\", \"eu-west-1\"))\n\n"
        );
        n += 1;
    }
    out
}

fn stats(mut samples: Vec<Duration>) -> (f64, f64, f64) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    // Nearest-rank percentiles: the sample at `percent`% of the way.
    let p = |percent: usize| ms(samples[(samples.len() - 1) * percent / 100]);
    (p(50), p(95), ms(*samples.last().expect("samples")))
}

fn main() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut client = Client::start(dir.path(), Value::Null);
    let uri = format!("file://{}/big.star", dir.path().display());
    let first = script(0);
    let lines = first.lines().count();
    client.open(&uri, &first);
    let found = client.diagnostics(&uri);
    assert!(found.is_empty(), "the script is clean: {found:?}");

    let mut diagnostics = Vec::new();
    for round in 1..=ROUNDS {
        // Every other change leaves a mistake the diagnostics must show.
        let mut text = script(round);
        if round % 2 == 1 {
            text.push_str("undefined_here\n");
        }
        let started = Instant::now();
        client.change(&uri, round as u64 + 1, &text);
        let got = client.diagnostics(&uri);
        diagnostics.push(started.elapsed());
        assert_eq!(got.len(), round % 2, "round {round}: {got:?}");
    }
    // A clean text, so completion works from a fresh parse.
    let text = script(ROUNDS + 1) + "Reso\n";
    client.change(&uri, ROUNDS as u64 + 2, &text);
    client.diagnostics(&uri);
    let last = text.lines().count() as u64 - 1;
    let mut completion = Vec::new();
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let items = client.request("textDocument/completion", Client::at(&uri, last, 4));
        completion.push(started.elapsed());
        let offered = items
            .get("items")
            .unwrap_or(&items)
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            offered.iter().any(|i| i["label"] == "Resource"),
            "Resource is offered"
        );
    }
    client.stop();

    println!(
        "function-starlark lsp, {lines}-line scripts, {ROUNDS} rounds each, client-side times"
    );
    println!("| measure | median | p95 | max | target |");
    println!("|---|---|---|---|---|");
    let (m, p, x) = stats(diagnostics);
    println!("| diagnostics after a change | {m:.1} ms | {p:.1} ms | {x:.1} ms | 100 ms |");
    let (m, p, x) = stats(completion);
    println!("| completion at the end | {m:.1} ms | {p:.1} ms | {x:.1} ms | 50 ms |");
    typed();
}

/// The measures on a provider's generated modules.
fn typed() {
    let Some(crds) = provider_crds().filter(|d| d.is_dir()) else {
        println!("| provider-aws v0.52.0 | skipped: the module cannot be downloaded | | | |");
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut gen_times = Vec::new();
    let mut peak = 0;
    for round in 0..5 {
        let out = dir.path().join(format!("gen-{round}"));
        let (took, kib) = generate(&crds, &out);
        gen_times.push(took);
        peak = peak.max(kib);
    }
    let (m, p, x) = stats(gen_times);
    println!(
        "| gen crd, provider-aws v0.52.0 (199 CRDs), 5 runs | {m:.0} ms | {p:.0} ms | {x:.0} ms (peak RSS {} MiB) | seconds |",
        peak / 1024
    );
    std::fs::rename(dir.path().join("gen-0"), dir.path().join("schemas")).expect("the modules");

    let mut client = Client::start(dir.path(), Value::Null);
    let uri = format!("file://{}/typed.star", dir.path().display());
    client.open(&uri, &typed_script(0));
    let found = client.diagnostics(&uri);
    assert!(found.is_empty(), "the script is clean: {found:?}");
    let mut diagnostics = Vec::new();
    for round in 1..=ROUNDS {
        // Every other change writes a field the constructor does not have.
        let mut text = typed_script(round);
        if round % 2 == 1 {
            text.push_str("VPCSpecForProvider(cidrBlock = \"x\", regoin = \"y\")\n");
        }
        let started = Instant::now();
        client.change(&uri, round as u64 + 1, &text);
        let got = client.diagnostics(&uri);
        diagnostics.push(started.elapsed());
        assert_eq!(got.len(), round % 2, "round {round}: {got:?}");
    }
    let text = typed_script(ROUNDS + 1) + "VPCSpecForProvider(region = \"eu-west-1\", )\n";
    client.change(&uri, ROUNDS as u64 + 2, &text);
    client.diagnostics(&uri);
    let last = text.lines().count() as u64 - 1;
    let inside = "VPCSpecForProvider(region = \"eu-west-1\", ".len() as u64;
    let mut completion = Vec::new();
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let items = client.request("textDocument/completion", Client::at(&uri, last, inside));
        completion.push(started.elapsed());
        let offered = items
            .get("items")
            .unwrap_or(&items)
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            offered.iter().any(|i| i["label"] == "cidrBlock"),
            "cidrBlock is offered: {items}"
        );
    }
    client.stop();
    let (m, p, x) = stats(diagnostics);
    println!(
        "| diagnostics after a change, loading the provider's modules | {m:.1} ms | {p:.1} ms | {x:.1} ms | 100 ms |"
    );
    let (m, p, x) = stats(completion);
    println!(
        "| completion inside a constructor's call | {m:.1} ms | {p:.1} ms | {x:.1} ms | 50 ms |"
    );
}
