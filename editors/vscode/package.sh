#!/usr/bin/env bash
# Packages the VS Code extension with vsce into OUT (function-starlark.vsix
# beside this script by default), at the function's version
# (package/version.sh), holding what .vscodeignore leaves in.
#   editors/vscode/package.sh [OUT]
set -euo pipefail
# OUT as given, from where the script was started.
out="$(realpath -m "${1:-$(dirname "$0")/function-starlark.vsix}")"
cd "$(dirname "$0")"

version="$(../../package/version.sh)"
mkdir -p "$(dirname "${out}")"
# The packages package-lock.json pins (scripts/tools.sh installs them too).
if [ ! -x node_modules/.bin/vsce ]; then
    npm ci --no-audit --no-fund --loglevel=error >/dev/null
fi
# vsce (a dev dependency: 3.9 runs on Node.js 20, 4.x wants 22).
./node_modules/.bin/vsce package "${version}" --no-update-package-json \
    --no-git-tag-version --out "${out}"
