#!/usr/bin/env bash
# Prints CHANGELOG.md's section for VERSION (its text under `## VERSION`),
# the notes of that release; fails when there is none, so that no version is
# released without one.
#   package/changelog.sh VERSION
set -euo pipefail
cd "$(dirname "$0")/.."

version="${1:?usage: package/changelog.sh VERSION}"
notes="$(awk -v heading="## ${version}" '
    index($0, "## ") == 1 { inside = ($0 == heading || index($0, heading " ") == 1); next }
    inside { print }
' CHANGELOG.md)"
if [ -z "$(echo "${notes}" | tr -d '[:space:]')" ]; then
    echo "CHANGELOG.md has no section \"## ${version}\": write what the release brings first" >&2
    exit 1
fi
echo "${notes}"
