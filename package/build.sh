#!/usr/bin/env bash
# Builds the Crossplane package, function-starlark.xpkg, without Docker:
#   1. the release binary, built guided by a profile of itself at work
#      (package/pgo.sh), or the binary PACKAGE_BINARY names (scripts/test.sh
#      packages the build its tests run);
#   2. the runtime image, assembled with crane on a registry started on
#      loopback: the files package/rootfs.sh gathers (the binary, the glibc
#      and libgcc it loads as this machine's Debian packages installed
#      them, the CA bundle, users, name-service settings) in one layer;
#      entrypoint, non-root user, port 9443, OCI labels; saved as a tarball;
#   3. `crank xpkg build` embedding that image with package/crossplane.yaml
#      and the input CRD.
# Output in target/package/: function-starlark.xpkg, runtime-image.tar and
# function-starlark (the binary). Needs crank, crane and the CNCF registry
# (scripts/test.sh installs them; REGISTRY_BIN points at another registry).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=target/package
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
GOBIN="$(go env GOPATH)/bin"
CRANE="${CRANE:-${GOBIN}/crane}"
CRANK="${CRANK:-${GOBIN}/crank}"
REGISTRY_BIN="${REGISTRY_BIN:-${GOBIN}/registry}"
CA_BUNDLE="${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"

if [ -n "${PACKAGE_BINARY:-}" ]; then
    binary="${PACKAGE_BINARY}"
else
    CRANK="${CRANK}" ./package/pgo.sh
    binary="target/x86_64-unknown-linux-gnu/release/function-starlark"
fi

rm -rf "${OUT}"
mkdir -p "${OUT}"
cp "${binary}" "${OUT}/function-starlark"
CA_BUNDLE="${CA_BUNDLE}" ./package/rootfs.sh "${binary}" "${OUT}/rootfs"
# One reproducible layer: fixed owner, modes and times.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='2026-01-01 00:00:00Z' \
    -C "${OUT}/rootfs" -cf "${OUT}/layer.tar" .

# crane builds images in a registry: a throwaway one on loopback.
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
config="${OUT}/registry.yaml"
cat > "${config}" <<EOF
version: 0.1
storage:
  filesystem:
    rootdirectory: ${PWD}/${OUT}/registry-data
http:
  addr: 127.0.0.1:${port}
log:
  level: error
EOF
"${REGISTRY_BIN}" serve "${config}" >"${OUT}/registry.log" 2>&1 &
registry_pid=$!
trap 'kill ${registry_pid} 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:${port}/v2/" >/dev/null && break
    sleep 0.1
done

image="127.0.0.1:${port}/function-starlark"
"${CRANE}" append --insecure --oci-empty-base -f "${OUT}/layer.tar" -t "${image}:layer" >/dev/null
"${CRANE}" mutate --insecure "${image}:layer" \
    --set-platform linux/amd64 \
    --entrypoint /function-starlark \
    --user 65532:65532 \
    --exposed-ports 9443/tcp \
    -l org.opencontainers.image.title=function-starlark \
    -l org.opencontainers.image.description="Crossplane composition function running Starlark scripts" \
    -l org.opencontainers.image.licenses=Apache-2.0 \
    -l org.opencontainers.image.version="${VERSION}" \
    -t "${image}:${VERSION}" -o "${OUT}/runtime-image.tar" >/dev/null

# The examples a user browses with the package: the Kubernetes objects of
# each case (the expected outputs are not objects).
for case in examples/*/; do
    name="$(basename "${case}")"
    mkdir -p "${OUT}/examples/${name}"
    for file in xr.yaml composition.yaml functions.yaml; do
        if [ -f "${case}${file}" ]; then
            cp "${case}${file}" "${OUT}/examples/${name}/"
        fi
    done
done

"${CRANK}" xpkg build \
    --package-root package \
    --examples-root "${OUT}/examples" \
    --embed-runtime-image-tarball "${OUT}/runtime-image.tar" \
    --package-file "${OUT}/function-starlark.xpkg"

echo "built ${OUT}/function-starlark.xpkg ($(du -h "${OUT}/function-starlark.xpkg" | cut -f1)), runtime image $(du -h "${OUT}/runtime-image.tar" | cut -f1)"
