//! How fast the editor hears back: `cargo bench --bench editor` starts
//! `function-starlark lsp` (the bench profile's binary), opens a 2,000-line
//! script and times, from the client's side, the diagnostics after each
//! change (every `check` finding of the whole file) and completion at the
//! end of the file. Prints one table.

#[allow(dead_code)]
#[path = "../tests/it/common/lsp_client.rs"]
mod lsp_client;

use std::fmt::Write as _;
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

    println!("function-starlark lsp, {lines}-line script, {ROUNDS} rounds each, client-side times");
    println!("| measure | median | p95 | max | target |");
    println!("|---|---|---|---|---|");
    let (m, p, x) = stats(diagnostics);
    println!("| diagnostics after a change | {m:.1} ms | {p:.1} ms | {x:.1} ms | 100 ms |");
    let (m, p, x) = stats(completion);
    println!("| completion at the end | {m:.1} ms | {p:.1} ms | {x:.1} ms | 50 ms |");
}
