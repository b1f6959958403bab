#!/usr/bin/env bash
# Builds the Crossplane package for linux/amd64 and linux/arm64, without
# Docker, into target/package/<arch>/:
#   1. the binaries: the release builds, guided by a profile of the function
#      at work (package/pgo.sh builds both targets), or under
#      PACKAGE_PROFILE=dev the debug builds (scripts/test.sh packages those:
#      the binary its tests run and an arm64 one cross-built beside it);
#   2. per platform, the runtime image, assembled with crane on a registry
#      started on loopback: the files package/rootfs.sh gathers (the binary,
#      the glibc and libgcc it loads as Debian's packages for its
#      architecture installed them, the CA bundle, users, name-service
#      settings) in one layer; entrypoint, non-root user, port 9443, OCI
#      labels with the version (package/version.sh); saved as a tarball;
#   3. per platform, `crossplane xpkg build` embedding that image with
#      package/crossplane.yaml, the input CRD and the examples.
# Each target/package/<arch>/ holds function-starlark (the binary),
# runtime-image.tar and function-starlark.xpkg; package/push.sh pushes both
# packages as one multi-platform package. ARCHES chooses the platforms
# ("amd64 arm64"). Needs the crossplane CLI, crane, the CNCF registry and the
# arm64 toolchain (scripts/tools.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=target/package
ARCHES="${ARCHES:-amd64 arm64}"
VERSION="$(./package/version.sh)"
REVISION="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
SOURCE="https://$(sed -n 's/^ *meta.crossplane.io\/source: *//p' package/crossplane.yaml)"
GOBIN="$(go env GOPATH)/bin"
CRANE="${CRANE:-${GOBIN}/crane}"
CROSSPLANE_CLI="${CROSSPLANE_CLI:-${GOBIN}/crossplane}"
REGISTRY_BIN="${REGISTRY_BIN:-${GOBIN}/registry}"
CA_BUNDLE="${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
# The binaries carry the version too (`function-starlark --version`).
export FUNCTION_STARLARK_VERSION="${VERSION}"

target_of() {
    case "$1" in
    amd64) echo x86_64-unknown-linux-gnu ;;
    arm64) echo aarch64-unknown-linux-gnu ;;
    *)
        echo "package/build.sh builds amd64 and arm64, not $1" >&2
        exit 1
        ;;
    esac
}

# The binary for an architecture, built as PACKAGE_PROFILE says.
binary_of() {
    local arch="$1" target
    target="$(target_of "${arch}")"
    if [ "${PACKAGE_PROFILE:-release}" = "dev" ]; then
        # The tests' own build when there is one: a plain `cargo build`
        # resolves features without the dev-dependencies and builds again.
        if [ "${arch}" != amd64 ] || [ ! -x target/debug/function-starlark ]; then
            cargo build --quiet --locked --bin function-starlark \
                $([ "${arch}" = amd64 ] || echo "--target ${target}") >&2
        fi
        if [ "${arch}" = amd64 ]; then
            echo target/debug/function-starlark
        else
            echo "target/${target}/debug/function-starlark"
        fi
    else
        echo "target/${target}/release/function-starlark"
    fi
}

if [ "${PACKAGE_PROFILE:-release}" != "dev" ]; then
    TARGETS="$(for arch in ${ARCHES}; do target_of "${arch}"; done)" ./package/pgo.sh
fi

rm -rf "${OUT}"
mkdir -p "${OUT}"

# Runs a tool with its chatter kept in target/package/tools.log, shown when
# it fails.
quiet() {
    if ! "$@" >>"${OUT}/tools.log" 2>&1; then
        cat "${OUT}/tools.log" >&2
        echo "package/build.sh: $1 failed" >&2
        return 1
    fi
}

# crane builds images in a registry: a throwaway one on loopback.
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
cat >"${OUT}/registry.yaml" <<EOF
version: 0.1
storage:
  filesystem:
    rootdirectory: ${PWD}/${OUT}/registry-data
http:
  addr: 127.0.0.1:${port}
log:
  level: error
EOF
"${REGISTRY_BIN}" serve "${OUT}/registry.yaml" >"${OUT}/registry.log" 2>&1 &
registry_pid=$!
trap 'kill ${registry_pid} 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:${port}/v2/" >/dev/null && break
    sleep 0.1
done

# The examples a user browses with the package: the Kubernetes objects of
# each case (the expected outputs are not objects).
for case in examples/*/; do
    name="$(basename "${case}")"
    mkdir -p "${OUT}/examples/${name}"
    for file in xr.yaml composition.yaml operation.yaml functions.yaml; do
        if [ -f "${case}${file}" ]; then
            cp "${case}${file}" "${OUT}/examples/${name}/"
        fi
    done
done

for arch in ${ARCHES}; do
    dir="${OUT}/${arch}"
    mkdir -p "${dir}"
    binary="$(binary_of "${arch}")"
    cp "${binary}" "${dir}/function-starlark"
    built="$(CA_BUNDLE="${CA_BUNDLE}" ./package/rootfs.sh "${binary}" "${dir}/rootfs")"
    if [ "${built}" != "${arch}" ]; then
        echo "${binary} is an ${built} binary, not ${arch}" >&2
        exit 1
    fi
    # One reproducible layer: fixed owner, modes and times.
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='2026-01-01 00:00:00Z' \
        -C "${dir}/rootfs" -cf "${dir}/layer.tar" .
    image="127.0.0.1:${port}/function-starlark-${arch}"
    quiet "${CRANE}" append --insecure --oci-empty-base \
        -f "${dir}/layer.tar" -t "${image}:layer"
    quiet "${CRANE}" mutate --insecure "${image}:layer" \
        --set-platform "linux/${arch}" \
        --entrypoint /function-starlark \
        --user 65532:65532 \
        --exposed-ports 9443/tcp \
        -l org.opencontainers.image.title=function-starlark \
        -l org.opencontainers.image.description="Crossplane composition function running Starlark scripts" \
        -l org.opencontainers.image.licenses=Apache-2.0 \
        -l org.opencontainers.image.version="${VERSION}" \
        -l org.opencontainers.image.revision="${REVISION}" \
        -l org.opencontainers.image.source="${SOURCE}" \
        -t "${image}:v${VERSION}" -o "${dir}/runtime-image.tar"
    quiet "${CROSSPLANE_CLI}" xpkg build \
        --package-root package \
        --examples-root "${OUT}/examples" \
        --embed-runtime-image-tarball "${dir}/runtime-image.tar" \
        --package-file "${dir}/function-starlark.xpkg"
    rm -f "${dir}/layer.tar"
    echo "built ${dir}/function-starlark.xpkg (linux/${arch}, ${VERSION}, $(du -h "${dir}/function-starlark.xpkg" | cut -f1))"
done
