#!/usr/bin/env bash
# Renders every example with the crossplane CLI against the function
# serving at ADDRESS, as a user renders them: a composite's example
# (xr.yaml) with `crossplane composition render`, an Operation's
# (operation.yaml) with `crossplane operation render`, each through
# Crossplane's own reconciler (the core binary, no Docker) with whichever
# observed, required and watched resources the example has.
#
#   package/render-examples.sh ADDRESS [EXAMPLE_DIR...]
#
# Every examples/*/ unless directories are given, ROUNDS times over (1).
# The profile-guided build trains on it (package/pgo.sh, three rounds) and
# tests/it/package.rs runs it on the debug build, so that an example of a
# new kind cannot break the release build unseen. The CLI is $CROSSPLANE_CLI
# or $(go env GOPATH)/bin/crossplane, the core binary $CROSSPLANE_CORE or
# $(go env GOPATH)/bin/function-starlark-cluster/crossplane (scripts/test.sh
# builds both). Prints one line per example rendered.
set -euo pipefail
cd "$(dirname "$0")/.."

address="$1"
shift
if [ "$#" -eq 0 ]; then set -- examples/*/; fi
gobin="$(go env GOPATH 2>/dev/null)/bin"
cli="$(realpath -m "${CROSSPLANE_CLI:-${gobin}/crossplane}")"
core="$(realpath -m "${CROSSPLANE_CORE:-${gobin}/function-starlark-cluster/crossplane}")"
for tool in "${cli}" "${core}"; do
    if [ ! -x "${tool}" ]; then
        echo "${tool} is missing: set CROSSPLANE_CLI and CROSSPLANE_CORE (scripts/test.sh builds both)" >&2
        exit 1
    fi
done

# The crossplane CLI's render of the example in $1.
render() {
    local dir="$1" args
    if [ -f "${dir}xr.yaml" ]; then
        args=(composition render xr.yaml composition.yaml functions.yaml)
    elif [ -f "${dir}operation.yaml" ]; then
        args=(operation render operation.yaml functions.yaml)
    else
        echo "${dir}: neither xr.yaml nor operation.yaml; say here how to render it" >&2
        exit 1
    fi
    args+=(--crossplane-binary "${core}"
        -a render.crossplane.io/runtime=Development
        -a "render.crossplane.io/runtime-development-target=${address}" -r)
    local file flag
    for pair in observed.yaml:-o required-resources.yaml:-e watched.yaml:-w; do
        file="${pair%%:*}"
        flag="${pair##*:}"
        if [ -f "${dir}${file}" ]; then args+=("${flag}" "${file}"); fi
    done
    local err
    if ! err="$(cd "${dir}" && "${cli}" "${args[@]}" 2>&1 >/dev/null)"; then
        echo "crossplane ${args[*]:0:2} failed for ${dir}:" >&2
        echo "${err}" >&2
        exit 1
    fi
    echo "rendered ${dir} (${args[0]})"
}

for _ in $(seq "${ROUNDS:-1}"); do
    for dir in "$@"; do
        render "${dir%/}/"
    done
done
