#!/usr/bin/env bash
# Runs every check CI runs: format, lints, unit/integration/golden tests, the
# examples rendered by the real `crossplane composition render` when the CLI
# can be installed, the packages for both platforms, and under CI the live
# control plane. Installs what it needs (scripts/tools.sh); run it from
# anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step names itself with the seconds the run has taken so far, so a slow
# CI log shows which step grew.
phase() { echo "== [${SECONDS} s] $*"; }

# A clean checkout gains nothing from incremental compilation, which costs
# most of a gigabyte of target/ (CI's disk has run out before).
if [ "${CI:-}" = "true" ]; then
    export CARGO_INCREMENTAL=0
fi

phase "scripts/tools.sh"
bash scripts/tools.sh
export REGISTRY_BIN="${REGISTRY_BIN:-$(go env GOPATH)/bin/registry}"

# Vectors recorded from the reference's own libraries (tools/goyaml for
# sigs.k8s.io/yaml, tools/gofloat and tools/goprint for strconv,
# tools/gostarlark for go.starlark.net, tools/goregex for regexp,
# tools/goencoding for the base64/base32/hex decoders) must be what they
# give today.
check_vectors() {
    local file="$1" dir="$2"
    shift 2
    phase "${file} against ${dir}"
    if ! (cd "${dir}" && go run . "$@") | cmp -s - "${file}"; then
        echo "${file} is not what ${dir} records; regenerate it (CONTRIBUTING.md, Recorded vectors)" >&2
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
check_vectors src/go/print_table.rs tools/goprint
check_vectors tests/compat/regex.jsonl tools/goregex 3000
check_vectors tests/compat/encoding.jsonl tools/goencoding 3000

phase "cargo fmt --check"
cargo fmt --check
phase "bash -n package/*.sh scripts/*.sh; actionlint"
for script in package/*.sh scripts/*.sh; do bash -n "${script}"; done
# The workflows (scripts/tools.sh builds actionlint; under CI it must).
actionlint="$(go env GOPATH)/bin/actionlint"
if [ -x "${actionlint}" ]; then
    "${actionlint}" .github/workflows/*.yaml
else
    echo "WARNING: actionlint is missing; .github/workflows not linted" >&2
fi

# Clippy lints while the tests compile: with clippy's driver wrapping rustc for
# this crate's targets, one build both lints (the same lints, warnings denied,
# as `cargo clippy --all-targets -- -D warnings`) and produces the binaries,
# where a separate `cargo clippy` would type-check every dependency and the
# crate a second time. Every cargo command below shares these variables, so
# none of them rebuilds what this one built.
RUSTC_WORKSPACE_WRAPPER="$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver)"
export RUSTC_WORKSPACE_WRAPPER
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
phase "cargo test --all-targets --no-run, linted by clippy (-D warnings)"
cargo test --quiet --locked --all-targets --no-run

# The Crossplane packages, linux/amd64 and linux/arm64, built as a user
# installs them (tests/it/xpkg.rs pushes them as one multi-platform package,
# pulls them and serves each binary, the arm64 one under qemu) around debug
# binaries: the one the tests run and an arm64 one cross-built beside it.
# The images, their libraries and the xpkgs are what a release ships; the
# release binaries are the profile-guided builds `./package/build.sh` makes
# on its own, whose training renders tests/it/package.rs runs
# (CONTRIBUTING.md, "What CI checks"). CI must build them; elsewhere a
# missing tool only skips them.
phase "package/build.sh (dev binaries)"
if ! PACKAGE_PROFILE=dev ./package/build.sh; then
    if [ "${CI:-}" = "true" ]; then
        echo "the packages did not build" >&2
        exit 1
    fi
    echo "WARNING: the packages did not build; tests/it/xpkg.rs will be skipped" >&2
fi
# The examples' composition tests and the standard library's Starlark tests,
# run by the binary as a user runs them (also asserted in tests/it/test_cli.rs).
phase "function-starlark test examples/ stdlib/"
# The binary the test build made: `cargo run` would build another, since a
# plain build resolves dependency features without the dev-dependencies.
target/debug/function-starlark test examples/ stdlib/
phase "cargo test"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
cargo test 2>&1 | tee "$log"
# cargo's last runner line is the doc tests' (none here); close with the
# total over every test binary so the summary is the whole run's.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "%d passed, %d failed\n", p, f }' "$log"

# The live control plane (tests/e2e, docs/live-control-plane.md): the
# package installed by Crossplane's package manager, every example and the
# scenarios reconciled through it, on Crossplane v2.3.4 and on 1.20.1 (the
# 1.x clusters users still run). It needs root and takes over /etc/hosts
# and a handful of loopback ports, so outside CI it runs when asked for
# (E2E=1). Its tools are built first, on their own: cold, that is most of
# the run.
if [ "${CI:-}" = "true" ] || [ "${E2E:-}" = "1" ]; then
    for version in v2.3.4 v1.20.1; do
        phase "scripts/cluster.sh tools (Crossplane ${version})"
        CROSSPLANE_VERSION="${version}" bash scripts/cluster.sh tools
        phase "live control plane (tests/e2e, Crossplane ${version})"
        CROSSPLANE_VERSION="${version}" E2E=1 cargo test --quiet --locked --test e2e
    done
fi
phase "done"
