#!/usr/bin/env bash
# Builds the release binaries guided by a profile of the function doing its
# job, into target/<target>/release/ for each of TARGETS (the host's,
# x86_64-unknown-linux-gnu, by default; package/build.sh adds
# aarch64-unknown-linux-gnu):
#   1. a build that counts what runs (-Cprofile-generate), in its own
#      target directory (target/pgo-generate);
#   2. that build serving every example to the crossplane CLI's render
#      three times over gRPC (package/render-examples.sh), the server and
#      its worker processes as deployed, then running the examples' and the
#      standard library's Starlark tests; each process writes its counts
#      when it exits;
#   3. the counts merged (llvm-profdata, rustup's llvm-tools) and the
#      release build made with them (-Cprofile-use): code that runs is
#      optimised for the paths taken, code that never ran is kept small;
#   4. the functions a server and its worker run on starting and on their
#      first request found the same way (a server started and stopped,
#      then one that answered one example), and the release build linked
#      by lld with its functions in that order (package/pgo-order.py):
#      each process's first code together, so an idle one keeps less of
#      the binary resident. docs/architecture.md ("The shipped binary") has
#      what both gained.
# Needs the crossplane CLI and Crossplane's core binary (what
# package/render-examples.sh says); package/build.sh calls it.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=x86_64-unknown-linux-gnu
GENERATE_DIR=target/pgo-generate
PROFILES="${PWD}/target/pgo-profiles"
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

# Starts the counting build's server, its processes writing their counts
# into $1 (workers idle for a second are asked to leave, and exit writing
# theirs); sets `server` and `address`.
start_server() {
    export LLVM_PROFILE_FILE="$1/%p.profraw"
    local port
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    address="127.0.0.1:${port}"
    server_log="$1/server.log"
    "${counting}" --insecure --address "${address}" --metrics-address "" \
        --worker-idle-seconds 1 >"${server_log}" 2>&1 &
    server=$!
    trap 'kill ${server} 2>/dev/null || true' EXIT
    for _ in $(seq 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/${port}") 2>/dev/null; then
            return 0
        fi
        if ! kill -0 "${server}" 2>/dev/null; then
            break
        fi
        sleep 0.1
    done
    echo "the counting build did not listen on ${address}; its log:" >&2
    cat "${server_log}" >&2
    exit 1
}

# Stops the server started into $1 (SIGTERM: it and its workers exit
# writing their counts); its own profile becomes $1/server.profraw.
stop_server() {
    if ! kill -TERM "${server}" 2>/dev/null; then
        echo "the counting build's server stopped before the end of the run; its log:" >&2
        cat "${server_log}" >&2
        exit 1
    fi
    local status=0
    wait "${server}" || status=$?
    trap - EXIT
    unset LLVM_PROFILE_FILE
    if [ ! -f "$1/${server}.profraw" ]; then
        echo "the counting build's server (exit status ${status}) wrote no profile into $1; its log:" >&2
        cat "${server_log}" >&2
        exit 1
    fi
    mv "$1/${server}.profraw" "$1/server.profraw"
}

# Waits (up to 10 s) until the server started into $1 has no worker left:
# a worker that retires exits on its own, writing its counts (one still
# there at shutdown is killed and writes none).
await_retirement() {
    for _ in $(seq 100); do
        if [ -z "$(cat /proc/"${server}"/task/*/children 2>/dev/null)" ] \
            && [ -n "$(find "$1" -name '[0-9]*.profraw')" ]; then
            return 0
        fi
        sleep 0.1
    done
    echo "no worker of the counting build retired into $1 within 10 s; its log:" >&2
    cat "${server_log}" >&2
    exit 1
}

# The crossplane CLI's renders of the examples given (all by default) with
# the server at `address`.
render() {
    if ! ./package/render-examples.sh "${address}" "$@" >/dev/null; then
        echo "the examples did not render (the function's log: ${server_log})" >&2
        exit 1
    fi
}

echo "== the counting build at work"
mkdir -p "${PROFILES}/work" "${PROFILES}/startup" "${PROFILES}/first"
start_server "${PROFILES}/work"
ROUNDS=3 render
if ! LLVM_PROFILE_FILE="${PROFILES}/work/test-%p.profraw" \
    "${counting}" test examples/ stdlib/ >"${PROFILES}/test.log" 2>&1; then
    echo "the Starlark tests failed under the counting build:" >&2
    cat "${PROFILES}/test.log" >&2
    exit 1
fi
await_retirement "${PROFILES}/work"
stop_server "${PROFILES}/work"
# The server, at least one worker and the test run.
count="$(find "${PROFILES}/work" -name '*.profraw' | wc -l)"
if [ "${count}" -lt 3 ]; then
    echo "the counting build wrote ${count} profiles, expected the server's, its workers' and the tests'" >&2
    exit 1
fi
"${PROFDATA}" merge -o "${PROFILES}/merged.profdata" "${PROFILES}"/work/*.profraw

echo "== what a server and its worker run first"
# Started and stopped; then started, one example rendered, stopped; each
# once its worker has retired.
start_server "${PROFILES}/startup"
await_retirement "${PROFILES}/startup"
stop_server "${PROFILES}/startup"
start_server "${PROFILES}/first"
render examples/bucket-topic/
await_retirement "${PROFILES}/first"
stop_server "${PROFILES}/first"
python3 package/pgo-order.py "${PROFDATA}" "${PROFILES}/order.txt" \
    "${PROFILES}/startup" "${PROFILES}/first" "${PROFILES}/merged.profdata"
# Cargo checks the profile's time for this package's own crate only, and
# never the order file: the names carry their content's hash, so that new
# counts or a new order rebuild every crate, dependencies included.
for file in merged.profdata order.txt; do
    sum="$(sha256sum "${PROFILES}/${file}" | cut -c1-16)"
    mv "${PROFILES}/${file}" "${PROFILES}/${file%.*}-${sum}.${file##*.}"
done
merged="$(echo "${PROFILES}"/merged-*.profdata)"
order="$(echo "${PROFILES}"/order-*.txt)"

# CI starts from a clean checkout every time: the counting build's target
# directory (about a gigabyte) would only take disk the tests need.
if [ "${CI:-}" = "true" ]; then
    rm -rf "${GENERATE_DIR}"
fi

# lld, which rustup ships with rustc, takes the order (GNU ld does not),
# and links for every target.
GCC_LD="$(rustc --print sysroot)/lib/rustlib/${host}/bin/gcc-ld"
if [ ! -x "${GCC_LD}/ld.lld" ]; then
    echo "rustup's lld is missing at ${GCC_LD}/ld.lld" >&2
    exit 1
fi
flags=("-Cprofile-use=${merged}"
    -Clink-arg=-fuse-ld=lld "-Clink-arg=-B${GCC_LD}"
    "-Clink-arg=-Wl,--symbol-ordering-file=${order}"
    # Functions the release build inlined everywhere have no symbol left.
    -Clink-arg=-Wl,--no-warn-symbol-ordering
    # Relative relocations packed (RELR, which glibc 2.36 reads): a table
    # of about 10 KB instead of 1 MB that every process reads at start.
    -Clink-arg=-Wl,-z,pack-relative-relocs)
rustflags="$(printf '"%s",' "${flags[@]}")"
# The arm64 build is guided by the same counts and order: the code is the
# same but for a few target-specific functions, whose counts LLVM drops
# when their shape differs.
for target in ${TARGETS:-${TARGET}}; do
    echo "== the release build for ${target}, guided by ${count} profiles, its functions in order"
    # Every crate is built again with the new counts: the last build's files
    # would only take disk.
    cargo clean --release --target "${target}" >/dev/null 2>&1 || true
    cargo build --release --locked --target "${target}" --bin function-starlark \
        --config "target.${target}.rustflags=[${rustflags%,}]"
    if ! readelf -p .comment "target/${target}/release/function-starlark" | grep -q "Linker: LLD"; then
        echo "the ${target} release build was not linked by lld, so its functions are not in order" >&2
        exit 1
    fi
done
