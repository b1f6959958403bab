#!/usr/bin/env bash
# Packages the VS Code extension with vsce into OUT (function-starlark.vsix
# beside this script by default), at the function's version
# (package/version.sh), holding what .vscodeignore leaves in.
#   editors/vscode/package.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")"

out="$(realpath -m "${1:-function-starlark.vsix}")"
version="$(../../package/version.sh)"
mkdir -p "$(dirname "${out}")"
npm ci --no-audit --no-fund --loglevel=error >/dev/null
# vsce 3.9 runs on Node.js 20 (4.x wants 22).
npx --yes @vscode/vsce@3.9.2 package "${version}" --no-update-package-json \
    --no-git-tag-version --out "${out}"
