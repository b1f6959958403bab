#!/usr/bin/env bash
# Runs every check CI runs: format, lints, unit/integration/golden tests, and
# the examples rendered by the real `crossplane render` (crank) when the CLI
# can be installed. Installs what it needs; run it from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."

rustup component add rustfmt clippy >/dev/null 2>&1 || true

# The real client. Newer releases render in a container, so stay on v2.2.x.
CRANK_VERSION=v2.2.4
if [ -z "${CRANK:-}" ] && ! command -v crank >/dev/null 2>&1; then
    gobin="$(go env GOPATH 2>/dev/null)/bin"
    if [ ! -x "$gobin/crank" ]; then
        echo "installing the crossplane CLI (crank ${CRANK_VERSION})"
        if ! go install "github.com/crossplane/crossplane/v2/cmd/crank@${CRANK_VERSION}"; then
            echo "WARNING: cannot install crank ${CRANK_VERSION}; tests/render.rs will be skipped" >&2
        fi
    fi
fi

# The OCI registry tests/oci.rs pushes module artifacts to and loads them
# from (CNCF distribution). The tests build it themselves when it is missing;
# installing it here keeps that out of the test timings.
REGISTRY_MODULE=github.com/distribution/distribution/v3/cmd/registry@v3.1.2
if [ -z "${REGISTRY_BIN:-}" ]; then
    gobin="$(go env GOPATH)/bin"
    if [ ! -x "$gobin/registry" ]; then
        echo "installing the test OCI registry (${REGISTRY_MODULE})"
        go install "${REGISTRY_MODULE}"
    fi
    export REGISTRY_BIN="$gobin/registry"
fi

# Vectors recorded from the reference's own libraries (tools/goyaml for
# sigs.k8s.io/yaml, tools/gofloat and tools/goprint for strconv,
# tools/gostarlark for go.starlark.net, tools/goregex for regexp,
# tools/goencoding for the base64/base32/hex decoders) must be what they
# give today.
check_vectors() {
    local file="$1" dir="$2"
    shift 2
    echo "== ${file} against ${dir}"
    if ! (cd "${dir}" && go run . "$@") | cmp -s - "${file}"; then
        echo "${file} is not what ${dir} records; regenerate it (README, Development)" >&2
        exit 1
    fi
}
check_vectors tests/yaml/vectors.jsonl tools/goyaml decode ../../tests/yaml/cases.jsonl 4000
check_vectors tests/yaml/encode.jsonl tools/goyaml encode 3000
check_vectors tests/compat/floats.txt tools/gofloat 3000
check_vectors tests/compat/json.txt tools/gostarlark json 3000
check_vectors tests/compat/text.txt tools/gostarlark text 3000
check_vectors tests/compat/conversions.txt tools/gostarlark cases ../../tests/compat/conversions.in
check_vectors tests/compat/arithmetic.txt tools/gostarlark cases ../../tests/compat/arithmetic.in
check_vectors src/builtins/go_print.rs tools/goprint
check_vectors tests/compat/regex.jsonl tools/goregex 3000
check_vectors tests/compat/encoding.jsonl tools/goencoding 3000

echo "== cargo fmt --check"
cargo fmt --check
echo "== cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets --quiet -- -D warnings
echo "== cargo test"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
cargo test 2>&1 | tee "$log"
# cargo's last runner line is the doc tests' (none here); close with the
# total over every test binary so the summary is the whole run's.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "%d passed, %d failed\n", p, f }' "$log"
