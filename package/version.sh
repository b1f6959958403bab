#!/usr/bin/env bash
# Prints the version a build carries, from one place: the git tag on the
# commit being built (`v1.2.3` gives 1.2.3), as in a release, else Cargo.toml's
# `version`. package/build.sh stamps it into the binary
# (FUNCTION_STARLARK_VERSION), the image's labels and the package's tag;
# CHANGELOG.md has a section for each.
set -euo pipefail
cd "$(dirname "$0")/.."

tag="$(git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null || true)"
if [ -n "${tag}" ]; then
    echo "${tag#v}"
else
    sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1
fi
