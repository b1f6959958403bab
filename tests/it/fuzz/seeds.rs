//! The fuzz corpora's starting points, written from what the repository
//! already holds: the recorded Go vectors (`tests/yaml/`, `tests/compat/`),
//! the examples (scripts, Compositions, XRs, the requests `render` would
//! send) and the standard library. `scripts/fuzz.sh seeds` runs this into
//! `fuzz/seeds/<target>/`, then minimises each with the corpus into
//! `fuzz/corpus/<target>/`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use function_sdk_rust::proto::v1::{Resource, RunFunctionRequest, State};
use prost::Message;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::common;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The JSON objects of a JSON-lines file.
fn json_lines(relative: &str) -> Vec<Value> {
    read(&root().join(relative))
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// Every file under `dir` whose name ends with one of `suffixes`.
fn files(dir: &Path, suffixes: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            files(&path, suffixes, out);
        } else if suffixes.iter().any(|s| path.to_string_lossy().ends_with(s)) {
            out.push(path);
        }
    }
}

/// The function-starlark step's input of each Composition under examples/.
fn example_inputs() -> Vec<(PathBuf, Value)> {
    let mut compositions = Vec::new();
    files(
        &root().join("examples"),
        &["composition.yaml"],
        &mut compositions,
    );
    compositions.sort();
    compositions
        .into_iter()
        .filter_map(|path| {
            let doc = common::documents(&read(&path)).into_iter().next()?;
            let input = doc["spec"]["pipeline"]
                .as_array()?
                .iter()
                .find(|s| s["functionRef"]["name"] == "function-starlark")?["input"]
                .clone();
            Some((path.parent()?.to_owned(), input))
        })
        .collect()
}

/// One seed set: inputs by target.
#[derive(Default)]
struct Seeds(Vec<(&'static str, Vec<u8>)>);

impl Seeds {
    fn add(&mut self, target: &'static str, data: impl Into<Vec<u8>>) {
        self.0.push((target, data.into()));
    }

    /// Writes each input as `<dir>/<target>/<sha256 prefix>`.
    fn write(&self, dir: &Path) -> usize {
        let mut written = BTreeSet::new();
        for (target, data) in &self.0 {
            let folder = dir.join(target);
            std::fs::create_dir_all(&folder).expect("a seed folder");
            let name = hex::encode(&Sha256::digest(data)[..10]);
            std::fs::write(folder.join(&name), data).expect("a seed file");
            written.insert((target, name));
        }
        written.len()
    }
}

fn yaml_and_json(seeds: &mut Seeds) {
    for case in json_lines("tests/yaml/cases.jsonl") {
        seeds.add("yaml", case.as_str().expect("a YAML string"));
    }
    for vector in json_lines("tests/yaml/vectors.jsonl") {
        seeds.add("yaml", vector["yaml"].as_str().expect("its input"));
        if let Some(json) = vector["json"].as_str() {
            seeds.add("json", json);
        }
    }
    for vector in json_lines("tests/yaml/encode.jsonl") {
        seeds.add("json", vector["json"].as_str().expect("its value"));
        if let Some(yaml) = vector["yaml"].as_str() {
            seeds.add("yaml", yaml);
        }
    }
    let mut documents = Vec::new();
    files(&root().join("examples"), &[".yaml"], &mut documents);
    for path in documents {
        let text = read(&path);
        for doc in common::documents(&text) {
            seeds.add("json", serde_json::to_string(&doc).expect("JSON"));
        }
        seeds.add("yaml", text);
    }
}

fn scripts(seeds: &mut Seeds) {
    let mut paths = Vec::new();
    for dir in ["examples", "stdlib", "tests"] {
        files(&root().join(dir), &[".star"], &mut paths);
    }
    for path in paths {
        seeds.add("syntax", read(&path));
    }
    for (_, input) in example_inputs() {
        if let Some(source) = input["spec"]["source"].as_str() {
            seeds.add("syntax", source);
        }
    }
}

fn regexes(seeds: &mut Seeds) {
    for vector in json_lines("tests/compat/regex.jsonl") {
        let parts = ["pattern", "s", "replacement"].map(|k| vector[k].as_str().expect("a string"));
        let mut data = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                data.push(0xff);
            }
            data.extend_from_slice(part.as_bytes());
        }
        seeds.add("regex", data);
    }
}

fn encodings(seeds: &mut Seeds) {
    let members = ["b64dec", "b64url_dec", "b32dec", "hex_dec"];
    for vector in json_lines("tests/compat/encoding.jsonl") {
        let member = vector["member"].as_str().expect("a member");
        let pick = members
            .iter()
            .position(|m| *m == member)
            .expect("a decoder");
        let mut data = vec![u8::try_from(pick).expect("a small index")];
        data.extend_from_slice(vector["data"].as_str().expect("its data").as_bytes());
        seeds.add("encoding", data);
    }
}

fn floats(seeds: &mut Seeds) {
    for line in read(&root().join("tests/compat/floats.txt")).lines() {
        let (bits, _) = line.split_once(' ').expect("bits and text");
        let bits = u64::from_str_radix(bits, 16).expect("hex bits");
        seeds.add("float", bits.to_le_bytes());
    }
}

/// `oci://` targets quoted anywhere in the docs, tests and sources.
fn oci_references(seeds: &mut Seeds) {
    let mut paths = Vec::new();
    for dir in ["docs", "tests", "src", "examples"] {
        files(
            &root().join(dir),
            &[".rs", ".md", ".yaml", ".star"],
            &mut paths,
        );
    }
    let mut found = BTreeSet::new();
    for path in paths {
        let text = read(&path);
        for (at, _) in text.match_indices("oci://") {
            let reference: String = text[at..]
                .chars()
                .take_while(|c| !c.is_whitespace() && !"\"'`)<>,\\".contains(*c))
                .collect();
            found.insert(reference);
        }
    }
    for reference in found {
        seeds.add("oci_reference", reference);
    }
}

fn durations(seeds: &mut Seeds) {
    // The quoted arguments of the parser's own tests, and a few more.
    let tests = read(&root().join("src/go/duration.rs"));
    for piece in tests.split("(\"").skip(1) {
        if let Some((literal, _)) = piece.split_once("\")") {
            seeds.add("duration", literal);
        }
    }
    for text in [
        "30s",
        "1h2m3.5s",
        "-1.5h",
        "2562047h47m16.854775807s",
        "1µs",
        "0",
    ] {
        seeds.add("duration", text);
    }
}

fn depths(seeds: &mut Seeds) {
    for deep in 0..8u8 {
        for route in 0..6u8 {
            seeds.add("depth", [deep, route, 0x5a]);
        }
    }
}

/// The request `render` sends for each example: the XR observed (with the
/// observed resources, when the example has them) and the step's input.
fn requests(seeds: &mut Seeds) {
    for (dir, input) in example_inputs() {
        let Ok(xr) = std::fs::read_to_string(dir.join("xr.yaml")) else {
            continue;
        };
        let xr = common::documents(&xr).into_iter().next().expect("an XR");
        let observed = std::fs::read_to_string(dir.join("observed.yaml"))
            .map(|t| common::documents(&t))
            .unwrap_or_default();
        let resources = observed
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let name = r["metadata"]["annotations"]["crossplane.io/composition-resource-name"]
                    .as_str()
                    .map_or_else(|| format!("r{i}"), str::to_owned);
                let resource = Resource {
                    resource: Some(common::to_struct(r)),
                    ..Resource::default()
                };
                (name, resource)
            })
            .collect();
        let request = RunFunctionRequest {
            observed: Some(State {
                composite: Some(Resource {
                    resource: Some(common::to_struct(&xr)),
                    ..Resource::default()
                }),
                resources,
            }),
            input: Some(common::to_struct(&input)),
            ..RunFunctionRequest::default()
        };
        seeds.add("request", request.encode_to_vec());
    }
}

/// Writes the seeds into `FUZZ_SEEDS` (`scripts/fuzz.sh seeds` sets it),
/// or into a folder of its own, and checks every target got some.
#[test]
fn write_seeds() {
    let scratch = tempfile::tempdir().expect("a temp dir");
    let dir =
        std::env::var("FUZZ_SEEDS").map_or_else(|_| scratch.path().to_path_buf(), PathBuf::from);
    let mut seeds = Seeds::default();
    yaml_and_json(&mut seeds);
    scripts(&mut seeds);
    regexes(&mut seeds);
    encodings(&mut seeds);
    floats(&mut seeds);
    oci_references(&mut seeds);
    durations(&mut seeds);
    depths(&mut seeds);
    requests(&mut seeds);
    let written = seeds.write(&dir);
    eprintln!("{written} seeds written to {}", dir.display());
    for (target, _) in function_starlark::fuzzing::TARGETS {
        let count = std::fs::read_dir(dir.join(target)).map_or(0, Iterator::count);
        assert!(count > 0, "no seeds for the {target} target");
    }
}
