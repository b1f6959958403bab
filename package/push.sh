#!/usr/bin/env bash
# Pushes the packages package/build.sh built, one per platform, to REF as
# one multi-platform package: an image index listing linux/amd64 and
# linux/arm64, from which Crossplane's package manager and each node's
# runtime take their own platform's image.
#   package/push.sh REF      e.g. registry.example.com/my-org/function-starlark:v0.1.0
# Registries on loopback are spoken to over plain HTTP. Credentials come
# from the Docker configuration (`crossplane xpkg login` or `docker login`).
# Needs the crossplane CLI (CROSSPLANE_CLI, or $(go env GOPATH)/bin/crossplane).
set -euo pipefail
cd "$(dirname "$0")/.."

reference="${1:?usage: package/push.sh REF}"
CROSSPLANE_CLI="${CROSSPLANE_CLI:-$(go env GOPATH)/bin/crossplane}"
packages=()
for arch in ${ARCHES:-amd64 arm64}; do
    file="target/package/${arch}/function-starlark.xpkg"
    if [ ! -f "${file}" ]; then
        echo "${file} is missing: build it with package/build.sh" >&2
        exit 1
    fi
    packages+=("${file}")
done
files="$(
    IFS=,
    echo "${packages[*]}"
)"
"${CROSSPLANE_CLI}" xpkg push -f "${files}" "${reference}"
