# syntax=docker/dockerfile:1
# The recipe of package/build.sh for linux/amd64, for those with Docker,
# building the same image: the profile-guided glibc binary (package/pgo.sh,
# which trains it on the crossplane CLI's renders of every example, through
# Crossplane's core binary, both built in the first stage) and the files
# package/rootfs.sh gathers around it (the glibc and libgcc it loads from
# this Debian release, the CA bundle, users, name-service settings), on an
# empty base, as a non-root user, on port 9443.

FROM golang:1.26-bookworm AS crossplane
# Built from pinned requirements, each in a module of its own, as
# scripts/tools.sh and scripts/cluster.sh build them.
RUN mkdir /cli && cd /cli \
    && printf 'module toolbuild\n\ngo 1.25\n\nrequire github.com/crossplane/cli/v2 v2.5.0\n' > go.mod \
    && printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/crossplane/cli/v2/cmd/crossplane"\n' > tools.go \
    && go mod tidy \
    && go build -ldflags "-X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=v2.5.0" \
        -o /usr/local/bin/crossplane github.com/crossplane/cli/v2/cmd/crossplane
RUN mkdir /core && cd /core \
    && printf 'module toolbuild\n\ngo 1.25\n\nrequire github.com/crossplane/crossplane/v2 v2.3.4\n' > go.mod \
    && printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/crossplane/crossplane/v2/cmd/crossplane"\n' > tools.go \
    && go mod tidy \
    && go build -ldflags "-X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=v2.3.4" \
        -o /usr/local/bin/crossplane-core github.com/crossplane/crossplane/v2/cmd/crossplane

FROM rust:1.95-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 \
    && rustup component add llvm-tools
COPY --from=crossplane /usr/local/bin/crossplane /usr/local/bin/crossplane-core /usr/local/bin/
WORKDIR /src
COPY . .
RUN CROSSPLANE_CLI=/usr/local/bin/crossplane CROSSPLANE_CORE=/usr/local/bin/crossplane-core \
        FUNCTION_STARLARK_VERSION="$(./package/version.sh)" ./package/pgo.sh \
    && ./package/rootfs.sh target/x86_64-unknown-linux-gnu/release/function-starlark /rootfs

FROM scratch
COPY --from=build /rootfs/ /
LABEL org.opencontainers.image.title="function-starlark" \
      org.opencontainers.image.description="Crossplane composition function running Starlark scripts" \
      org.opencontainers.image.licenses="Apache-2.0"
USER 65532:65532
EXPOSE 9443
ENTRYPOINT ["/function-starlark"]
