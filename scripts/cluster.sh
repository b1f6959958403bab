#!/usr/bin/env bash
# A real Crossplane control plane on loopback, without Docker or kubelet:
# etcd, kube-apiserver, kube-controller-manager (garbage collector and
# namespace controllers only), Crossplane core, and an OCI registry for the
# function's package. docs/live-control-plane.md says what each piece is for.
#
#   scripts/cluster.sh tools           build the tools that are missing, start nothing
#   scripts/cluster.sh core            build Crossplane's core binary only (render's oracle)
#   scripts/cluster.sh up              build what is missing, start what is not running
#   scripts/cluster.sh install XPKG[,XPKG...] [FLAG...]
#                                      push the package (several, one per platform: as
#                                      one multi-platform package), install it as a
#                                      Function and run its binary as the Deployment says
#                                      (PACKAGE_TAG: the tag, v<version> by default;
#                                      installing another moves the Function to it)
#   scripts/cluster.sh republish DIR VERSION XPKG[,XPKG...]
#                                      the same packages as a new version in DIR
#   scripts/cluster.sh restart         run the installed function's processes again
#   scripts/cluster.sh stand-in [BINARY]
#                                      run BINARY (the Go implementation, another build)
#                                      behind the Function's name, on the same addresses
#                                      and certificates, to compare them under the same
#                                      control plane; without BINARY, the installed one again
#   scripts/cluster.sh env             print the KUBECONFIG and kubectl to use
#   scripts/cluster.sh down            stop every process this script started
#
# Every process is recorded by its PID in ${CLUSTER_DIR}/pids and stopped by
# it. The tools are built once from pinned versions into ${CLUSTER_TOOLS}
# (kept with the Go tools between runs); the cluster's state lives in
# ${CLUSTER_DIR} (target/cluster). `install` adds one marked line to
# /etc/hosts (Crossplane dials the function by its Service's name) and
# `down` removes it, so both need root. CROSSPLANE_VERSION chooses the
# Crossplane (v2.3.4, or v1.20.1).
set -euo pipefail
cd "$(dirname "$0")/.."

K8S_VERSION=v1.35.4
# The Crossplane the control plane runs: v2.3.4, or a 1.x (v1.20.1) for the
# clusters that still run one (CROSSPLANE_VERSION=v1.20.1).
CROSSPLANE_VERSION="${CROSSPLANE_VERSION:-v2.3.4}"
# Where each keeps the version it reports (and checks packages against).
case "${CROSSPLANE_VERSION}" in
v1.*)
    CROSSPLANE_MODULE=github.com/crossplane/crossplane
    CROSSPLANE_VERSION_VAR=github.com/crossplane/crossplane/internal/version.version
    ;;
v2.*)
    CROSSPLANE_MODULE=github.com/crossplane/crossplane/v2
    CROSSPLANE_VERSION_VAR=github.com/crossplane/crossplane-runtime/v2/pkg/version.version
    ;;
*)
    echo "cluster: CROSSPLANE_VERSION ${CROSSPLANE_VERSION} is neither v1.x nor v2.x" >&2
    exit 1
    ;;
esac
ETCD_PORT=23790
API_PORT=16443
REGISTRY_PORT=15000
# Crossplane's own listeners, moved off 8080, 8081 and 9443 (the flags take a
# port and listen on every interface).
CROSSPLANE_METRICS_PORT=18080
CROSSPLANE_HEALTH_PORT=18081
CROSSPLANE_WEBHOOK_PORT=19443
NAMESPACE=crossplane-system
HOSTS_MARK="# function-starlark scripts/cluster.sh"

GOBIN="$(go env GOPATH)/bin"
CLUSTER_TOOLS="${CLUSTER_TOOLS:-${GOBIN}/function-starlark-cluster}"
CLUSTER_DIR="${CLUSTER_DIR:-${PWD}/target/cluster}"
# The function's replicas: one process per address, all under the Service's
# name, as the headless Service hands Crossplane every pod's address.
FUNCTION_ADDRESSES="${FUNCTION_ADDRESSES:-127.0.0.2}"

KUBECTL="${CLUSTER_TOOLS}/kubectl"
# v2.3.4 keeps the plain name render's oracle has always had.
if [ "${CROSSPLANE_VERSION}" = v2.3.4 ]; then
    CROSSPLANE="${CLUSTER_TOOLS}/crossplane"
else
    CROSSPLANE="${CLUSTER_TOOLS}/crossplane-${CROSSPLANE_VERSION}"
fi
KUBECONFIG_FILE="${CLUSTER_DIR}/admin.kubeconfig"
PIDS="${CLUSTER_DIR}/pids"
LOGS="${CLUSTER_DIR}/logs"

log() { echo "cluster: $*" >&2; }
die() {
    echo "cluster: $*" >&2
    exit 1
}
kubectl() { "${KUBECTL}" --kubeconfig "${KUBECONFIG_FILE}" "$@"; }

# Builds one Go tool from a throwaway module: `go install module@version`
# asks the module proxy for version lists it refuses here, while building a
# pinned requirement works.
go_build() {
    local module="$1" version="$2" extra_go_mod="$3" ldflags="$4"
    shift 4
    local dir
    dir="$(mktemp -d)"
    {
        printf 'module clustertools\n\ngo 1.25\n\nrequire %s %s\n' "${module}" "${version}"
        printf '%s\n' "${extra_go_mod}"
    } >"${dir}/go.mod"
    {
        printf '//go:build tools\n\npackage tools\n\nimport (\n'
        for package in "$@"; do printf '\t_ "%s"\n' "${package}"; done
        printf ')\n'
    } >"${dir}/tools.go"
    (
        cd "${dir}"
        go mod tidy
        for package in "$@"; do
            log "building ${package##*/} (${module} ${version})"
            go build -ldflags "${ldflags}" -o "${CLUSTER_TOOLS}/${package##*/}" "${package}"
        done
    ) || {
        rm -rf "${dir}"
        die "cannot build $* from ${module} ${version}"
    }
    rm -rf "${dir}"
}

# Crossplane's core binary: the control plane's, and the reconciler
# `crossplane composition render --crossplane-binary` runs. 1.x lives in
# the module without the /v2 suffix.
build_core() {
    mkdir -p "${CLUSTER_TOOLS}"
    if [ ! -x "${CROSSPLANE}" ]; then
        # Packages state the Crossplane versions they need; an unstamped
        # build has none and refuses them all.
        # Built aside, then named for its version: another version's
        # binary may be `crossplane`.
        local built
        built="$(mktemp -d)"
        (
            CLUSTER_TOOLS="${built}"
            go_build "${CROSSPLANE_MODULE}" "${CROSSPLANE_VERSION}" "" \
                "-X ${CROSSPLANE_VERSION_VAR}=${CROSSPLANE_VERSION}" \
                "${CROSSPLANE_MODULE}/cmd/crossplane"
        ) || die "cannot build Crossplane ${CROSSPLANE_VERSION}"
        mv "${built}/crossplane" "${CROSSPLANE}"
        rm -rf "${built}"
    fi
}

build_tools() {
    mkdir -p "${CLUSTER_TOOLS}"
    if ! command -v etcd >/dev/null 2>&1; then
        log "installing etcd (the distribution's etcd-server)"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null ||
            die "cannot install etcd-server"
        # The package starts a system etcd on the default ports; this one
        # runs its own.
        systemctl stop etcd >/dev/null 2>&1 || true
    fi
    local missing=()
    for tool in kube-apiserver kube-controller-manager kubectl; do
        [ -x "${CLUSTER_TOOLS}/${tool}" ] || missing+=("k8s.io/kubernetes/cmd/${tool}")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        # k8s.io/kubernetes points its staging modules at its own tree; a
        # module requiring it names their published versions instead.
        local gomod staging replaces
        gomod="$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" |
            sed -n 's/^\s*"GoMod": "\(.*\)",$/\1/p')"
        [ -f "${gomod}" ] || die "cannot download k8s.io/kubernetes ${K8S_VERSION}"
        staging="v0.${K8S_VERSION#v1.}"
        replaces="$(sed -n "s#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#replace \1 => \1 ${staging}#p" "${gomod}")"
        local stamp="k8s.io/component-base/version"
        local minor="${K8S_VERSION#v1.}"
        go_build k8s.io/kubernetes "${K8S_VERSION}" "${replaces}" \
            "-X ${stamp}.gitVersion=${K8S_VERSION} -X ${stamp}.gitMajor=1 -X ${stamp}.gitMinor=${minor%%.*}" \
            "${missing[@]}"
    fi
    build_core
    for tool in crane registry; do
        [ -x "${GOBIN}/${tool}" ] || die "${tool} is missing from ${GOBIN}: run scripts/test.sh once"
    done
}

running() {
    local name="$1" pid
    [ -f "${PIDS}/${name}" ] || return 1
    pid="$(cat "${PIDS}/${name}")"
    kill -0 "${pid}" 2>/dev/null
}

# Starts a process in the background, its output in logs/NAME.log and its
# PID in pids/NAME.
start() {
    local name="$1"
    shift
    if running "${name}"; then
        return 0
    fi
    # Appended: a restarted process adds to what its predecessor logged.
    "$@" >>"${LOGS}/${name}.log" 2>&1 &
    echo $! >"${PIDS}/${name}"
}

# Waits up to SECONDS for a command to succeed.
wait_for() {
    local what="$1" seconds="$2"
    shift 2
    local deadline=$((SECONDS + seconds))
    until "$@" >/dev/null 2>&1; do
        [ "${SECONDS}" -lt "${deadline}" ] || die "${what} did not come up in ${seconds} s (logs in ${LOGS})"
        sleep 0.2
    done
}

certificates() {
    local dir="${CLUSTER_DIR}/pki"
    [ -f "${dir}/admin.crt" ] && return 0
    mkdir -p "${dir}"
    (
        cd "${dir}"
        openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=cluster-ca \
            -keyout ca.key -out ca.crt 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -subj /CN=kube-apiserver \
            -keyout apiserver.key -out apiserver.csr 2>/dev/null
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.96.0.1,DNS:kubernetes.default.svc\n' >apiserver.ext
        openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
            -extfile apiserver.ext -out apiserver.crt 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -subj "/O=system:masters/CN=admin" \
            -keyout admin.key -out admin.csr 2>/dev/null
        openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
            -out admin.crt 2>/dev/null
        openssl genrsa -out sa.key 2048 2>/dev/null
        openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    )
    cat >"${KUBECONFIG_FILE}" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:${API_PORT}
    certificate-authority: ${dir}/ca.crt
users:
- name: admin
  user:
    client-certificate: ${dir}/admin.crt
    client-key: ${dir}/admin.key
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
EOF
}

# Writes the keys of a Secret in Crossplane's namespace to files in DIR.
secret_files() {
    local secret="$1" dir="$2" key
    shift 2
    mkdir -p "${dir}"
    for key in "$@"; do
        kubectl -n "${NAMESPACE}" get secret "${secret}" \
            -o "jsonpath={.data.${key//./\\.}}" | base64 -d >"${dir}/${key}"
    done
}

# Crossplane 1.x's `core init` reads /crds and /webhookconfigurations (a
# symlink is not enough); the copies carry a mark so `down` removes only
# its own.
CORE_PATHS_MARK=.function-starlark-cluster
core_paths() {
    local source="$1" dir
    for dir in crds webhookconfigurations; do
        if [ -e "/${dir}" ] && [ ! -e "/${dir}/${CORE_PATHS_MARK}" ]; then
            die "/${dir} exists and is not this script's: Crossplane 1.x reads its ${dir} from there"
        fi
        rm -rf "/${dir:?}"
        cp -r "${source}/${dir}" "/${dir}"
        chmod -R u+w "/${dir}"
        touch "/${dir}/${CORE_PATHS_MARK}"
    done
}

# The Service Crossplane 1.x's webhook configurations name. Nothing routes
# a ClusterIP here, so it is an ExternalName for this machine: the API
# server dials localhost at the webhook's port and checks the certificate
# against the Service's DNS name, which `core init` signs it for.
webhook_service() {
    kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata:
  name: crossplane-webhooks
  namespace: ${NAMESPACE}
spec:
  type: ExternalName
  externalName: localhost
  ports:
  - name: webhooks
    port: ${CROSSPLANE_WEBHOOK_PORT}
EOF
}

up() {
    build_tools
    mkdir -p "${PIDS}" "${LOGS}" "${CLUSTER_DIR}/cache/xpkg" "${CLUSTER_DIR}/cache/xfn"
    # etcd keeps what one Crossplane version installed; another would start
    # on top of it.
    local made="${CLUSTER_DIR}/crossplane-version"
    if [ -f "${made}" ] && [ "$(cat "${made}")" != "${CROSSPLANE_VERSION}" ]; then
        die "${CLUSTER_DIR} holds a Crossplane $(cat "${made}") cluster: scripts/cluster.sh down, remove ${CLUSTER_DIR}, then up"
    fi
    echo "${CROSSPLANE_VERSION}" >"${made}"
    certificates
    local pki="${CLUSTER_DIR}/pki"

    start etcd etcd --name local --data-dir "${CLUSTER_DIR}/etcd" \
        --listen-client-urls "http://127.0.0.1:${ETCD_PORT}" \
        --advertise-client-urls "http://127.0.0.1:${ETCD_PORT}" \
        --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 10))" \
        --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 10))" \
        --initial-cluster "local=http://127.0.0.1:$((ETCD_PORT + 10))"
    wait_for etcd 30 curl -sf "http://127.0.0.1:${ETCD_PORT}/health"

    start kube-apiserver "${CLUSTER_TOOLS}/kube-apiserver" \
        --etcd-servers "http://127.0.0.1:${ETCD_PORT}" \
        --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "${API_PORT}" \
        --tls-cert-file "${pki}/apiserver.crt" --tls-private-key-file "${pki}/apiserver.key" \
        --client-ca-file "${pki}/ca.crt" \
        --service-account-key-file "${pki}/sa.pub" \
        --service-account-signing-key-file "${pki}/sa.key" \
        --service-account-issuer https://kubernetes.default.svc \
        --service-cluster-ip-range 10.96.0.0/16 \
        --authorization-mode RBAC \
        --cert-dir "${CLUSTER_DIR}/apiserver-certs"
    wait_for kube-apiserver 120 kubectl get --raw /readyz

    start kube-controller-manager "${CLUSTER_TOOLS}/kube-controller-manager" \
        --kubeconfig "${KUBECONFIG_FILE}" \
        --controllers garbagecollector,namespace \
        --leader-elect=false --secure-port 0

    local source
    source="$(go env GOMODCACHE)/${CROSSPLANE_MODULE}@${CROSSPLANE_VERSION}/cluster"
    [ -d "${source}" ] || go mod download "${CROSSPLANE_MODULE}@${CROSSPLANE_VERSION}"
    kubectl get namespace "${NAMESPACE}" >/dev/null 2>&1 || kubectl create namespace "${NAMESPACE}" >/dev/null
    # The Helm chart's ServiceAccount: the package runtime copies its image
    # pull secrets into each function's Deployment.
    kubectl -n "${NAMESPACE}" get serviceaccount crossplane >/dev/null 2>&1 ||
        kubectl -n "${NAMESPACE}" create serviceaccount crossplane >/dev/null
    # As Crossplane's Helm chart configures its init container.
    local init_env=(KUBECONFIG="${KUBECONFIG_FILE}" POD_NAMESPACE="${NAMESPACE}"
        TLS_CA_SECRET_NAME=crossplane-root-ca TLS_CLIENT_SECRET_NAME=crossplane-tls-client)
    local init_flags=(--enable-webhooks=false)
    local start_flags=(--enable-webhooks=false --enable-operations)
    local start_env=()
    case "${CROSSPLANE_VERSION}" in
    v1.*)
        # 1.x reads its CRDs and webhook configurations from fixed paths,
        # and its Usages protect only through its webhook: serve it.
        core_paths "${source}"
        webhook_service
        init_env+=(WEBHOOK_ENABLED=true WEBHOOK_SERVICE_NAME=crossplane-webhooks
            WEBHOOK_SERVICE_NAMESPACE="${NAMESPACE}" WEBHOOK_SERVICE_PORT="${CROSSPLANE_WEBHOOK_PORT}"
            TLS_SERVER_SECRET_NAME=crossplane-tls-server)
        init_flags=()
        start_flags=(--enable-webhooks --enable-usages)
        start_env=(TLS_SERVER_SECRET_NAME=crossplane-tls-server
            TLS_SERVER_CERTS_DIR="${CLUSTER_DIR}/crossplane-server-tls")
        ;;
    *)
        init_env+=(CRDS_PATH="${source}/crds")
        ;;
    esac
    # The first run often fails to find the kinds of the CRDs it has just
    # created (a pod's init container would be restarted): try again.
    local attempt
    for attempt in 1 2 3 4 5; do
        if env "${init_env[@]}" "${CROSSPLANE}" core init "${init_flags[@]}" \
            >"${LOGS}/crossplane-init.log" 2>&1; then
            break
        fi
        [ "${attempt}" -lt 5 ] || die "crossplane core init failed (${LOGS}/crossplane-init.log)"
        sleep 1
    done
    if [[ "${CROSSPLANE_VERSION}" == v1.* ]]; then
        secret_files crossplane-tls-server "${CLUSTER_DIR}/crossplane-server-tls" tls.crt tls.key
    fi

    local client="${CLUSTER_DIR}/crossplane-client-tls"
    secret_files crossplane-tls-client "${client}" ca.crt tls.crt tls.key
    start crossplane env KUBECONFIG="${KUBECONFIG_FILE}" POD_NAMESPACE="${NAMESPACE}" \
        TLS_CLIENT_SECRET_NAME=crossplane-tls-client "${start_env[@]}" \
        "${CROSSPLANE}" core start "${start_flags[@]}" \
        --tls-client-certs-dir "${client}" \
        --xpkg-cache-dir "${CLUSTER_DIR}/cache/xpkg" --xfn-cache-dir "${CLUSTER_DIR}/cache/xfn" \
        --metrics-port "${CROSSPLANE_METRICS_PORT}" --health-probe-port "${CROSSPLANE_HEALTH_PORT}" \
        --webhook-port "${CROSSPLANE_WEBHOOK_PORT}" ${CROSSPLANE_FLAGS:-}
    wait_for crossplane 60 curl -sf "http://127.0.0.1:${CROSSPLANE_HEALTH_PORT}/healthz"

    cat >"${CLUSTER_DIR}/registry.yaml" <<EOF
version: 0.1
storage:
  filesystem:
    rootdirectory: ${CLUSTER_DIR}/registry
http:
  addr: 127.0.0.1:${REGISTRY_PORT}
log:
  level: error
EOF
    start registry "${GOBIN}/registry" serve "${CLUSTER_DIR}/registry.yaml"
    wait_for registry 30 curl -sf "http://127.0.0.1:${REGISTRY_PORT}/v2/"
    log "up: KUBECONFIG=${KUBECONFIG_FILE}"
}

install() {
    local packages="$1"
    shift
    local xpkg
    for xpkg in ${packages//,/ }; do
        [ -f "${xpkg}" ] || die "no package at ${xpkg}: build one with package/build.sh"
    done
    running crossplane || die "the control plane is not running: scripts/cluster.sh up"
    local name=function-starlark
    local image="127.0.0.1:${REGISTRY_PORT}/${name}:${PACKAGE_TAG:-v$(./package/version.sh)}"
    # Several packages (one per platform) become one multi-platform package,
    # as a release pushes it (package/push.sh); Crossplane and the stand-in
    # kubelet below each take this machine's platform from its index.
    if [[ "${packages}" == *,* ]]; then
        "${GOBIN}/crossplane" xpkg push -f "${packages}" "${image}" >/dev/null
        local platforms
        platforms="$("${GOBIN}/crane" manifest --insecure "${image}" |
            python3 -c 'import json, sys; print(" ".join(sorted(m["platform"]["os"] + "/" + m["platform"]["architecture"] for m in json.load(sys.stdin).get("manifests", []))))')"
        [ -n "${platforms}" ] || die "${image} is not a multi-platform package"
        log "pushed ${image}: ${platforms}"
    else
        "${GOBIN}/crane" push --insecure "${packages}" "${image}" >/dev/null
    fi

    # The flags ride on the DeploymentRuntimeConfig, as a user passes them.
    local args=""
    for arg in "$@"; do args+="            - \"${arg}\""$'\n'; done
    kubectl apply -f - >/dev/null <<EOF
apiVersion: pkg.crossplane.io/v1beta1
kind: DeploymentRuntimeConfig
metadata:
  name: ${name}
spec:
  deploymentTemplate:
    spec:
      selector: {}
      template:
        spec:
          containers:
          - name: package-runtime
            args:
${args:-            []}
---
apiVersion: pkg.crossplane.io/v1
kind: Function
metadata:
  name: ${name}
spec:
  package: ${image}
  runtimeConfigRef:
    name: ${name}
EOF
    # The runtime names the Deployment after the Function's active revision:
    # the one of this package (an upgrade leaves the previous one current
    # for a moment).
    local revision="" current=""
    local deadline=$((SECONDS + 120))
    until [ "${current}" = "${image}" ] && [ -n "${revision}" ] &&
        kubectl -n "${NAMESPACE}" get deployment "${revision}" >/dev/null 2>&1; do
        [ "${SECONDS}" -lt "${deadline}" ] || die "the function's Deployment for ${image} did not come up in 120 s (logs in ${LOGS})"
        sleep 0.2
        current="$(kubectl get function "${name}" -o jsonpath='{.status.currentIdentifier}' 2>/dev/null || true)"
        revision="$(kubectl get function "${name}" -o jsonpath='{.status.currentRevision}' 2>/dev/null || true)"
    done
    local deployment="${revision}"
    wait_for "the function's TLS Secret" 60 kubectl -n "${NAMESPACE}" get secret "${name}-tls-server"

    # No kubelet runs the Deployment's pod: run its container here, with the
    # image it names, its arguments and its server certificates. Each
    # revision has its own files, as each pod its own filesystem: processes
    # of the one before keep running from theirs until they are replaced.
    local dir="${CLUSTER_DIR}/functions/${name}/revisions/${deployment}"
    rm -rf "${dir}"
    mkdir -p "${dir}/rootfs" "${dir}/tls"
    local deployed
    deployed="$(kubectl -n "${NAMESPACE}" get deployment "${deployment}" \
        -o jsonpath='{.spec.template.spec.containers[0].image}')"
    "${GOBIN}/crane" export --insecure --platform "linux/$(go env GOARCH)" "${deployed}" - |
        tar -x -C "${dir}/rootfs"
    kubectl -n "${NAMESPACE}" get deployment "${deployment}" \
        -o jsonpath='{range .spec.template.spec.containers[0].args[*]}{@}{"\n"}{end}' >"${dir}/args"
    for key in ca.crt tls.crt tls.key; do
        kubectl -n "${NAMESPACE}" get secret "${name}-tls-server" \
            -o "jsonpath={.data.${key//./\\.}}" | base64 -d >"${dir}/tls/${key}"
    done

    # The endpoint Crossplane dials is the Service's name; point it at the
    # function's loopback addresses.
    hosts_remove
    local address
    for address in ${FUNCTION_ADDRESSES}; do
        printf '%s %s.%s %s\n' "${address}" "${name}" "${NAMESPACE}" "${HOSTS_MARK}" >>/etc/hosts
    done
    ln -sfn "revisions/${deployment}" "${CLUSTER_DIR}/functions/${name}/current"
    rm -f "${CLUSTER_DIR}/functions/${name}/stand-in"
    restart
    kubectl -n "${NAMESPACE}" patch deployment "${deployment}" --subresource status --type merge \
        -p '{"status":{"replicas":1,"readyReplicas":1,"availableReplicas":1,"updatedReplicas":1,"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","lastUpdateTime":"2026-01-01T00:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}' >/dev/null
    wait_for "Function ${name} Healthy" 60 \
        kubectl wait --for condition=Healthy --timeout 1s "function.pkg.crossplane.io/${name}"
    log "installed ${image}: $(kubectl get function "${name}" --no-headers)"
}

# (Re)starts the installed function: one process per address, each the
# image's entrypoint with the Deployment's arguments, one after the other
# as a Deployment rolls its pods.
restart() {
    local name=function-starlark
    local dir
    dir="$(realpath -m "${CLUSTER_DIR}/functions/${name}/current")"
    [ -x "${dir}/rootfs/function-starlark" ] || die "no function installed: scripts/cluster.sh install XPKG"
    local args=() index=0 address
    mapfile -t args <"${dir}/args"
    # A stand-in (the Go implementation, or another build of this one)
    # takes only the flags both share; this one reads METRICS_ADDRESS too.
    local binary="${dir}/rootfs/function-starlark" own=(--metrics-address "")
    if [ -x "${CLUSTER_DIR}/functions/${name}/stand-in" ]; then
        binary="${CLUSTER_DIR}/functions/${name}/stand-in"
        args=()
        own=()
    fi
    for address in ${FUNCTION_ADDRESSES}; do
        stop "function-${index}"
        TLS_SERVER_CERTS_DIR="${dir}/tls" METRICS_ADDRESS="" start "function-${index}" \
            "${binary}" "${args[@]}" --address "${address}:9443" "${own[@]}"
        # Serving, or gone: a process left by another cluster on the same
        # address makes this one exit at once.
        local pid
        pid="$(cat "${PIDS}/function-${index}")"
        local deadline=$((SECONDS + 30))
        until ss -Hltnp "src ${address}:9443" 2>/dev/null | grep -q "pid=${pid},"; do
            kill -0 "${pid}" 2>/dev/null ||
                die "function-${index} exited: $(tail -1 "${LOGS}/function-${index}.log") (is another process on ${address}:9443?)"
            [ "${SECONDS}" -lt "${deadline}" ] || die "function-${index} did not listen on ${address}:9443 in 30 s"
            sleep 0.1
        done
        index=$((index + 1))
    done
}

# Runs BINARY in the installed function's place (its addresses, its
# certificates, its log files), or, without BINARY, the installed function
# again. The copy is kept as functions/<name>/stand-in, so the load test's
# CPU and memory readings (tests/e2e/cluster.rs) find its processes.
stand_in() {
    local name=function-starlark
    local copy="${CLUSTER_DIR}/functions/${name}/stand-in"
    rm -f "${copy}"
    if [ $# -gt 0 ]; then
        [ -x "$1" ] || die "no executable at $1"
        cp "$1" "${copy}"
    fi
    restart
    log "serving ${name} with ${1:-the installed package}"
}

# Builds the packages XPKG,... again as version VERSION into DIR/<arch>/:
# the same binary in a runtime image of its own (labelled VERSION) and a
# package of its own, so Crossplane sees a new package version with its own
# digest, as a release whose script behaviour is unchanged. Each package's
# runtime image is the runtime-image.tar package/build.sh leaves beside it.
republish() {
    local out="$1" version="$2" packages="$3"
    running registry || die "the control plane is not running: scripts/cluster.sh up"
    local xpkg arch built=()
    for xpkg in ${packages//,/ }; do
        local from
        from="$(dirname "${xpkg}")"
        arch="$(basename "${from}")"
        [ -f "${from}/runtime-image.tar" ] || die "no runtime-image.tar beside ${xpkg}"
        mkdir -p "${out}/${arch}"
        local image="127.0.0.1:${REGISTRY_PORT}/republish-${arch}"
        "${GOBIN}/crane" push --insecure "${from}/runtime-image.tar" "${image}:base" >/dev/null
        "${GOBIN}/crane" mutate --insecure "${image}:base" \
            -l org.opencontainers.image.version="${version}" \
            -t "${image}:${version}" -o "${out}/${arch}/runtime-image.tar" >/dev/null
        rm -f "${out}/${arch}/function-starlark.xpkg"
        mkdir -p "${out}/no-examples"
        "${GOBIN}/crossplane" xpkg build --package-root package --examples-root "${out}/no-examples" \
            --embed-runtime-image-tarball "${out}/${arch}/runtime-image.tar" \
            --package-file "${out}/${arch}/function-starlark.xpkg" >/dev/null
        built+=("${out}/${arch}/function-starlark.xpkg")
    done
    (
        IFS=,
        echo "${built[*]}"
    )
}

# Stops the recorded processes NAME... together: TERM to each, up to 15 s
# for all of them to exit, then KILL to any left.
stop() {
    local name pid pids=()
    for name in "$@"; do
        [ -f "${PIDS}/${name}" ] || continue
        pid="$(cat "${PIDS}/${name}")"
        if kill -0 "${pid}" 2>/dev/null; then
            kill -TERM "${pid}" 2>/dev/null || true
            pids+=("${pid}")
        fi
    done
    for _ in $(seq 150); do
        local alive=0
        for pid in "${pids[@]}"; do
            if kill -0 "${pid}" 2>/dev/null; then alive=1; fi
        done
        [ "${alive}" = 1 ] || break
        sleep 0.1
    done
    for pid in "${pids[@]}"; do kill -KILL "${pid}" 2>/dev/null || true; done
    for name in "$@"; do rm -f "${PIDS}/${name}"; done
}

hosts_remove() {
    if grep -qF "${HOSTS_MARK}" /etc/hosts 2>/dev/null; then
        # /etc/hosts may be a bind mount: rewrite it in place.
        local kept
        kept="$(grep -vF "${HOSTS_MARK}" /etc/hosts)"
        printf '%s\n' "${kept}" >/etc/hosts
    fi
}

down() {
    # The API server's clients first (the function among them), then the
    # API server, etcd last.
    local functions=()
    if [ -d "${PIDS}" ]; then
        mapfile -t functions < <(ls "${PIDS}" | grep '^function-' || true)
    fi
    stop "${functions[@]}" registry crossplane kube-controller-manager
    stop kube-apiserver
    stop etcd
    hosts_remove
    local dir
    for dir in crds webhookconfigurations; do
        if [ -e "/${dir}/${CORE_PATHS_MARK}" ]; then rm -rf "/${dir:?}"; fi
    done
}

case "${1:-}" in
tools) build_tools ;;
core) build_core ;;
up) up ;;
install)
    shift
    [ $# -ge 1 ] || die "usage: scripts/cluster.sh install XPKG[,XPKG...] [FLAG...]"
    install "$@"
    ;;
republish)
    shift
    [ $# -eq 3 ] || die "usage: scripts/cluster.sh republish DIR VERSION XPKG[,XPKG...]"
    republish "$@"
    ;;
restart) restart ;;
stand-in)
    shift
    stand_in "$@"
    ;;
env) printf 'export KUBECONFIG=%s\nalias kubectl=%s\n' "${KUBECONFIG_FILE}" "${KUBECTL}" ;;
down) down ;;
*) die "usage: scripts/cluster.sh tools | core | up | install XPKG[,XPKG...] [FLAG...] | republish DIR VERSION XPKG[,XPKG...] | restart | stand-in [BINARY] | env | down" ;;
esac
