#!/usr/bin/env bash
# Builds the release binary (static, musl) guided by a profile of the
# function doing its job, into target/x86_64-unknown-linux-musl/release/:
#   1. a build that counts what runs (-Cprofile-generate), in its own
#      target directory (target/pgo-generate);
#   2. that build serving every example to the real `crossplane render`
#      (crank) three times over gRPC, the server and its worker processes
#      as deployed, then running the examples' and the standard library's
#      Starlark tests; each process writes its counts when it exits;
#   3. the counts merged (llvm-profdata, rustup's llvm-tools) and the
#      release build made with them (-Cprofile-use): code that runs is laid
#      out together and optimised for the paths taken, code that never ran
#      is kept small and apart. README "Performance" has what it gained.
# Needs crank (CRANK, on PATH or in $(go env GOPATH)/bin); package/build.sh
# calls it.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=x86_64-unknown-linux-musl
GENERATE_DIR=target/pgo-generate
PROFILES="${PWD}/target/pgo-profiles"
if [ -z "${CRANK:-}" ]; then
    CRANK="$(command -v crank || echo "$(go env GOPATH 2>/dev/null)/bin/crank")"
fi
CRANK="$(realpath -m "${CRANK}")"
if [ ! -x "${CRANK}" ]; then
    echo "the crossplane CLI (crank) is missing at ${CRANK}: set CRANK (scripts/test.sh installs it)" >&2
    exit 1
fi
# Cargo ignores every configured rustflags when these are set, and with
# them the profile flags below and the packed relocations.
for var in RUSTFLAGS CARGO_ENCODED_RUSTFLAGS; do
    if [ -n "${!var:-}" ]; then
        echo "package/pgo.sh: ${var} is set; unset for this build (it would switch the profile off)" >&2
        unset "${var}"
    fi
done

rustup component add llvm-tools >/dev/null 2>&1 || true
host="$(rustc -vV | sed -n 's/^host: //p')"
PROFDATA="$(rustc --print sysroot)/lib/rustlib/${host}/bin/llvm-profdata"
if [ ! -x "${PROFDATA}" ]; then
    echo "llvm-profdata is missing: rustup component add llvm-tools" >&2
    exit 1
fi

rm -rf "${PROFILES}"
mkdir -p "${PROFILES}"
echo "== the counting build (target/pgo-generate)"
CARGO_TARGET_DIR="${GENERATE_DIR}" cargo build --release --locked --target "${TARGET}" \
    --bin function-starlark \
    --config "target.${TARGET}.rustflags=[\"-Cprofile-generate=${PROFILES}\"]"
counting="${GENERATE_DIR}/${TARGET}/release/function-starlark"

echo "== the counting build at work"
export LLVM_PROFILE_FILE="${PROFILES}/%p.profraw"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
address="127.0.0.1:${port}"
# Workers idle for a second are asked to leave, and exit writing their counts.
"${counting}" --insecure --address "${address}" --metrics-address "" \
    --worker-idle-seconds 1 >"${PROFILES}/server.log" 2>&1 &
server=$!
trap 'kill ${server} 2>/dev/null || true' EXIT
listening=false
for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/${port}") 2>/dev/null; then
        listening=true
        break
    fi
    sleep 0.1
done
if ! ${listening} || ! kill -0 "${server}" 2>/dev/null; then
    echo "the counting build did not listen on ${address}; its log:" >&2
    cat "${PROFILES}/server.log" >&2
    exit 1
fi
for _ in 1 2 3; do
    for case in examples/*/; do
        args=(render xr.yaml composition.yaml functions.yaml
            -a render.crossplane.io/runtime=Development
            -a "render.crossplane.io/runtime-development-target=${address}" -r)
        if [ -f "${case}observed.yaml" ]; then args+=(-o observed.yaml); fi
        if [ -f "${case}required-resources.yaml" ]; then args+=(-e required-resources.yaml); fi
        if ! (cd "${case}" && "${CRANK}" "${args[@]}" >/dev/null); then
            echo "crossplane render failed for ${case} (the function's log: ${PROFILES}/server.log)" >&2
            exit 1
        fi
    done
done
if ! "${counting}" test examples/ stdlib/ >"${PROFILES}/test.log" 2>&1; then
    echo "the Starlark tests failed under the counting build:" >&2
    cat "${PROFILES}/test.log" >&2
    exit 1
fi
sleep 2.5
if ! kill -TERM "${server}" 2>/dev/null; then
    echo "the counting build's server stopped before the end of the run; its log:" >&2
    cat "${PROFILES}/server.log" >&2
    exit 1
fi
wait "${server}" || true
trap - EXIT
unset LLVM_PROFILE_FILE
# The server, at least one worker and the test run.
count="$(find "${PROFILES}" -name '*.profraw' | wc -l)"
if [ "${count}" -lt 3 ]; then
    echo "the counting build wrote ${count} profiles, expected the server's, its workers' and the tests'" >&2
    exit 1
fi
"${PROFDATA}" merge -o "${PROFILES}/merged.profdata" "${PROFILES}"/*.profraw
# CI starts from a clean checkout every time: the counting build's target
# directory (about a gigabyte) would only take disk the tests need.
if [ "${CI:-}" = "true" ]; then
    rm -rf "${GENERATE_DIR}"
fi

echo "== the release build, guided by ${count} profiles"
cargo build --release --locked --target "${TARGET}" --bin function-starlark \
    --config "target.${TARGET}.rustflags=[\"-Cprofile-use=${PROFILES}/merged.profdata\"]"
