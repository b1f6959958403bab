#!/usr/bin/env bash
# Assembles the runtime image's files in DIR around BINARY, as package/build.sh
# and the Dockerfile both ship them: the binary at /function-starlark; its
# loader and the shared libraries it loads (glibc and libgcc: what a
# distroless `cc` base holds), at the paths it asks for, copied from the
# Debian packages of the binary's own architecture that installed them on
# this machine (an arm64 binary's from libc6:arm64 and libgcc-s1:arm64,
# installed beside the host's by Debian multiarch: scripts/tools.sh); the
# CA bundle; users and groups for the non-root uid; name-service settings.
#   package/rootfs.sh BINARY DIR
# Prints the image platform's architecture (amd64, arm64).
set -euo pipefail
binary="$1"
dir="$2"
CA_BUNDLE="${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"

machine="$(readelf -h "${binary}" | sed -n 's/^ *Machine: *//p')"
case "${machine}" in
*X86-64) arch=amd64 triplet=x86_64-linux-gnu ;;
AArch64) arch=arm64 triplet=aarch64-linux-gnu ;;
*)
    echo "${binary} is built for ${machine:-no known machine}; the image is built for amd64 or arm64" >&2
    exit 1
    ;;
esac

# The libraries an ELF file needs, by name.
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'; }

# Where the loader finds a library of this architecture: its multiarch
# directories (the loader's own cache lists the same).
locate() {
    local name="$1" path
    for path in "/lib/${triplet}/${name}" "/usr/lib/${triplet}/${name}"; do
        if [ -e "${path}" ]; then
            echo "${path}"
            return 0
        fi
    done
    echo "${binary} needs ${name}, which no ${arch} package installed in /lib/${triplet}: install the package for ${arch} (scripts/tools.sh)" >&2
    return 1
}

loader="$(readelf -l "${binary}" | sed -n 's/.*Requesting program interpreter: \(.*\)\]$/\1/p')"
if [ -z "${loader}" ]; then
    echo "${binary} names no loader: is it a dynamically linked glibc build?" >&2
    exit 1
fi
files=("${loader}")
pending=("${binary}")
while [ "${#pending[@]}" -gt 0 ]; do
    current="${pending[0]}"
    pending=("${pending[@]:1}")
    for name in $(needed "${current}"); do
        path="$(locate "${name}")"
        if [[ " ${files[*]} " != *" ${path} "* ]]; then
            files+=("${path}")
            pending+=("${path}")
        fi
    done
done

rm -rf "${dir}"
mkdir -p "${dir}/etc/ssl/certs"
cp "${binary}" "${dir}/function-starlark"
cp "${CA_BUNDLE}" "${dir}/etc/ssl/certs/ca-certificates.crt"
for file in "${files[@]}"; do
    owner="$(dpkg -S "${file}" 2>/dev/null || dpkg -S "$(readlink -f "${file}")" 2>/dev/null || true)"
    if [[ "${owner}" != *":${arch}: "* ]]; then
        echo "${file} comes from no ${arch} Debian package (dpkg -S: ${owner:-nothing}); the image would not hold the distribution's" >&2
        exit 1
    fi
    mkdir -p "${dir}$(dirname "${file}")"
    cp -L "${file}" "${dir}${file}"
done
# A user and group for the non-root uid, so tools that look them up agree.
printf 'root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/:/sbin/nologin\n' \
    >"${dir}/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"${dir}/etc/group"
# Names resolve from /etc/hosts, then DNS (glibc's own modules for both).
printf 'hosts: files dns\n' >"${dir}/etc/nsswitch.conf"
echo "${arch}"
