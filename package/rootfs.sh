#!/usr/bin/env bash
# Assembles the runtime image's files in DIR around BINARY, as package/build.sh
# and the Dockerfile both ship them: the binary at /function-starlark; the
# shared libraries it loads and its loader, at the paths it asks for, copied
# from the Debian packages that installed them on this machine (glibc and
# libgcc: what a distroless `cc` base holds); the CA bundle; users and groups
# for the non-root uid; name-service settings.
#   package/rootfs.sh BINARY DIR
set -euo pipefail
binary="$1"
dir="$2"
CA_BUNDLE="${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"

rm -rf "${dir}"
mkdir -p "${dir}/etc/ssl/certs"
cp "${binary}" "${dir}/function-starlark"
cp "${CA_BUNDLE}" "${dir}/etc/ssl/certs/ca-certificates.crt"
libraries="$(ldd "${binary}" | awk '/=> \// { print $3 } /^\t\// { print $1 }')"
if [ -z "${libraries}" ]; then
    echo "ldd lists no libraries for ${binary}: is it a glibc build?" >&2
    exit 1
fi
for lib in ${libraries}; do
    if ! dpkg -S "${lib}" >/dev/null 2>&1 && ! dpkg -S "$(readlink -f "${lib}")" >/dev/null 2>&1; then
        echo "${lib} comes from no Debian package; the image would not hold the distribution's" >&2
        exit 1
    fi
    mkdir -p "${dir}$(dirname "${lib}")"
    cp -L "${lib}" "${dir}${lib}"
done
# A user and group for the non-root uid, so tools that look them up agree.
printf 'root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/:/sbin/nologin\n' \
    > "${dir}/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "${dir}/etc/group"
# Names resolve from /etc/hosts, then DNS (glibc's own modules for both).
printf 'hosts: files dns\n' > "${dir}/etc/nsswitch.conf"
