#!/usr/bin/env bash
# Runs every check CI runs: format, lints, unit/integration/golden tests, the
# examples rendered by the real `crossplane composition render` when the CLI
# can be installed, and under CI the live control plane. Installs what it
# needs; run it from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step names itself with the seconds the run has taken so far, so a slow
# CI log shows which step grew.
phase() { echo "== [${SECONDS} s] $*"; }

rustup component add rustfmt clippy >/dev/null 2>&1 || true

# A clean checkout gains nothing from incremental compilation, which costs
# most of a gigabyte of target/ (CI's disk has run out before).
if [ "${CI:-}" = "true" ]; then
    export CARGO_INCREMENTAL=0
fi

# Go tools the tests use, built from throwaway modules: `go install
# module@version` asks the module proxy for the version list, which it
# refuses for these modules, while building a pinned requirement works.
go_tool() {
    local name="$1" module="$2" version="$3" package="$4" ldflags="${5:-}"
    local gobin
    gobin="$(go env GOPATH)/bin"
    if [ -x "${gobin}/${name}" ]; then
        return 0
    fi
    echo "installing ${name} (${module} ${version})"
    local dir
    dir="$(mktemp -d)"
    (
        cd "${dir}"
        printf 'module toolbuild\n\ngo 1.24\n\nrequire %s %s\n' "${module}" "${version}" > go.mod
        printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "${package}" > tools.go
        go mod tidy >/dev/null 2>&1 && go build -ldflags "${ldflags}" -o "${gobin}/${name}" "${package}"
    ) || echo "WARNING: cannot build ${name}" >&2
    rm -rf "${dir}"
}

# The oracle of `render`: the crossplane CLI (its own module since v2.3),
# stamped with its version, and Crossplane's core binary, whose reconciler
# the CLI runs with --crossplane-binary instead of a container
# (scripts/cluster.sh builds it, with the control plane's tools).
go_tool crossplane github.com/crossplane/cli/v2 v2.5.0 \
    github.com/crossplane/cli/v2/cmd/crossplane \
    "-X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=v2.5.0"
bash scripts/cluster.sh core || echo "WARNING: cannot build Crossplane's core binary" >&2
# crank v2.2.1 builds the package (`crank xpkg build`) and drives the
# profile-guided build's renders.
CRANK_VERSION=v2.2.1
if [ -z "${CRANK:-}" ] && ! crank render --help >/dev/null 2>&1; then
    go_tool crank github.com/crossplane/crossplane/v2 "${CRANK_VERSION}" \
        github.com/crossplane/crossplane/v2/cmd/crank
fi
# Assembles the runtime image of the package (package/build.sh).
go_tool crane github.com/google/go-containerregistry v0.22.1 \
    github.com/google/go-containerregistry/cmd/crane
# The editor tests/it/editor.rs drives `function-starlark lsp` from:
# Neovim's built-in LSP client, from the distribution's packages.
if ! command -v nvim >/dev/null 2>&1; then
    echo "installing Neovim"
    { apt-get install -y -q neovim || { apt-get update -q && apt-get install -y -q neovim; }; } \
        >/dev/null 2>&1 || echo "WARNING: cannot install Neovim" >&2
fi
if [ "${CI:-}" = "true" ]; then
    gobin="$(go env GOPATH)/bin"
    for tool in crossplane function-starlark-cluster/crossplane crank crane nvim; do
        if [ ! -x "${gobin}/${tool}" ] && ! command -v "${tool}" >/dev/null 2>&1; then
            echo "CI needs ${tool}, which could not be installed" >&2
            exit 1
        fi
    done
fi

# The OCI registry tests/it/oci.rs pushes module artifacts to and loads them
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
phase "bash -n package/*.sh scripts/*.sh"
for script in package/*.sh scripts/*.sh; do bash -n "${script}"; done

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

# The Crossplane package, built as a user installs it (tests/it/xpkg.rs pushes,
# pulls and serves it), around the debug binary the tests run: the image, its
# libraries and the xpkg are what a release ships; the release binary is the
# profile-guided build `./package/build.sh` makes on its own (CONTRIBUTING.md,
# "What CI checks"). CI must build it; elsewhere a missing tool only skips it.
phase "package/build.sh"
if ! PACKAGE_BINARY=target/debug/function-starlark ./package/build.sh; then
    if [ "${CI:-}" = "true" ]; then
        echo "the package did not build" >&2
        exit 1
    fi
    echo "WARNING: the package did not build; tests/it/xpkg.rs will be skipped" >&2
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
# scenarios reconciled through it. It needs root and takes over /etc/hosts
# and a handful of loopback ports, so outside CI it runs when asked for
# (E2E=1). Its tools are built first, on their own: cold, that is most of
# the run.
if [ "${CI:-}" = "true" ] || [ "${E2E:-}" = "1" ]; then
    phase "scripts/cluster.sh tools"
    bash scripts/cluster.sh tools
    phase "live control plane (tests/e2e)"
    E2E=1 cargo test --quiet --locked --test e2e
fi
phase "done"
