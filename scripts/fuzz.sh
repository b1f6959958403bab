#!/usr/bin/env bash
# The fuzz targets (fuzz/, docs/fuzzing.md), with cargo-fuzz on the nightly
# toolchain (`cargo install cargo-fuzz`):
#
#   scripts/fuzz.sh build                  build every target (ASan, debug assertions)
#   scripts/fuzz.sh seeds                  write fuzz/seeds/<target>/ from the recorded
#                                          vectors, the examples and the stdlib
#   scripts/fuzz.sh cmin [TARGET...]       merge seeds and new finds into fuzz/corpus/<target>/,
#                                          minimised
#   scripts/fuzz.sh run SECONDS [TARGET...]
#                                          run each target for SECONDS, one after the other,
#                                          then print a table of executions and findings
#   scripts/fuzz.sh replay                 the corpora and regressions on stable (tests/it/fuzz.rs)
#
# `run` starts from fuzz/corpus/<target>/ (and fuzz/regressions/<target>/
# and fuzz/seeds/<target>/ when present) and keeps what it finds in fuzz/work/<target>/ and its findings
# (crash-*, timeout-*, oom-*, leak-*) in fuzz/artifacts/<target>/; both are
# ignored by git. A finding ends that target's run: make it a regression
# (fuzz/regressions/<target>/), fix it, run again. FUZZ_CPU pins the runs
# to a CPU (taskset), FUZZ_LOGS names where the logs go.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(yaml json regex syntax oci_reference duration depth request float encoding)
triple="$(rustc -vV | sed -n 's/^host: //p')"
bin="fuzz/target/${triple}/release"
# The Go oracles, built once per change of their sources (src/fuzzing/oracle.rs).
export FUZZ_ORACLE_DIR="${FUZZ_ORACLE_DIR:-${PWD}/fuzz/target/oracles}"

# The budgets a run is judged by: a single input running 10 s (the request
# target's runs stop at 2 s), a process past 2 GiB, or one allocation past
# 1 GiB (four times a script's heap budget) is a finding.
LIBFUZZER_FLAGS=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1)
# The stack a script run's thread has (Limits::stack_bytes, 256 MiB): the
# parsers recurse as deep as the limits let them, on that stack.
ulimit -s 262144

targets() {
    if [ "$#" -gt 0 ]; then echo "$@"; else echo "${TARGETS[@]}"; fi
}

build() {
    (cd fuzz && nice -n 10 cargo +nightly fuzz build -O --debug-assertions)
}

seeds() {
    rm -rf fuzz/seeds
    FUZZ_SEEDS="${PWD}/fuzz/seeds" nice -n 10 cargo test --test it fuzz::seeds::write_seeds \
        -- --exact
}

cmin() {
    local target
    for target in $(targets "$@"); do
        mkdir -p "fuzz/corpus/${target}"
        for extra in "fuzz/seeds/${target}" "fuzz/work/${target}"; do
            if [ -d "${extra}" ]; then
                cp -n "${extra}"/* "fuzz/corpus/${target}/" 2>/dev/null || true
            fi
        done
        (cd fuzz && nice -n 10 cargo +nightly fuzz cmin -O --debug-assertions "${target}" \
            "corpus/${target}" -- "${LIBFUZZER_FLAGS[@]}")
        # Requests and scripts are big: their committed corpora keep inputs
        # up to 2 KiB and the seeds, so that all corpora stay within a few MB.
        if [ "${target}" = request ] || [ "${target}" = syntax ]; then
            find "fuzz/corpus/${target}" -type f -size +2048c -delete
            cp -n "fuzz/seeds/${target}"/* "fuzz/corpus/${target}/" 2>/dev/null || true
        fi
    done
}

run() {
    local seconds="$1" target log
    shift
    local logs="${FUZZ_LOGS:-fuzz/logs}"
    mkdir -p "${logs}"
    local pin=()
    if [ -n "${FUZZ_CPU:-}" ]; then pin=(taskset -c "${FUZZ_CPU}"); fi
    for target in $(targets "$@"); do
        mkdir -p "fuzz/work/${target}" "fuzz/artifacts/${target}"
        local dirs=("fuzz/work/${target}" "fuzz/corpus/${target}")
        for extra in "fuzz/regressions/${target}" "fuzz/seeds/${target}"; do
            if [ -d "${extra}" ]; then dirs+=("${extra}"); fi
        done
        log="${logs}/${target}.log"
        echo "== ${target}: ${seconds} s, log ${log}" >&2
        "${pin[@]}" nice -n 10 "${bin}/${target}" "${LIBFUZZER_FLAGS[@]}" \
            -max_total_time="${seconds}" -artifact_prefix="fuzz/artifacts/${target}/" \
            "${dirs[@]}" >"${log}" 2>&1 || true
    done
    table "${logs}" "$(targets "$@")"
}

# One row per target from its log's final stats and its folders.
table() {
    local logs="$1" target
    printf '%-14s %8s %12s %9s %8s %9s\n' target seconds executions exec/s corpus findings
    for target in $2; do
        local log="${logs}/${target}.log"
        local runs secs rate corpus findings
        # A run stopped by a finding has no "Done" line: its seconds show as -.
        runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "${log}" 2>/dev/null | tail -1)"
        secs="$(grep -ao 'Done [0-9]* runs in [0-9]* second' "${log}" 2>/dev/null | tail -1 |
            awk '{print $5}' || true)"
        rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "${log}" 2>/dev/null | tail -1)"
        corpus="$(find "fuzz/work/${target}" "fuzz/corpus/${target}" -type f -printf '%f\n' \
            2>/dev/null | sort -u | wc -l)"
        findings="$(find "fuzz/artifacts/${target}" -type f \( -name 'crash-*' -o -name 'timeout-*' \
            -o -name 'oom-*' -o -name 'leak-*' \) 2>/dev/null | wc -l)"
        printf '%-14s %8s %12s %9s %8s %9s\n' "${target}" "${secs:--}" "${runs:--}" \
            "${rate:--}" "${corpus}" "${findings}"
    done
}

replay() {
    nice -n 10 cargo test --test it fuzz::
}

case "${1:-}" in
    build) build ;;
    seeds) seeds ;;
    cmin) shift; cmin "$@" ;;
    run)
        shift
        [ "$#" -ge 1 ] || { echo "usage: scripts/fuzz.sh run SECONDS [TARGET...]" >&2; exit 2; }
        run "$@"
        ;;
    table) shift; table "${FUZZ_LOGS:-fuzz/logs}" "$(targets "$@")" ;;
    replay) replay ;;
    *)
        sed -n '2,20p' "$0" >&2
        exit 2
        ;;
esac
