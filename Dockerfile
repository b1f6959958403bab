# syntax=docker/dockerfile:1
# The recipe of package/build.sh, for those with Docker, building the same
# image: the profile-guided glibc binary (package/pgo.sh, which drives the
# function with the crossplane CLI built in the first stage) and the files
# package/rootfs.sh gathers around it (the glibc and libgcc it loads from
# this Debian release, the CA bundle, users, name-service settings), on an
# empty base, as a non-root user, on port 9443.

FROM golang:1.25-bookworm AS crank
WORKDIR /crank
# Built from a pinned requirement, as scripts/test.sh builds it.
RUN printf 'module toolbuild\n\ngo 1.24\n\nrequire github.com/crossplane/crossplane/v2 v2.2.1\n' > go.mod \
    && printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/crossplane/crossplane/v2/cmd/crank"\n' > tools.go \
    && go mod tidy \
    && go build -o /usr/local/bin/crank github.com/crossplane/crossplane/v2/cmd/crank

FROM rust:1.95-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 \
    && rustup component add llvm-tools
COPY --from=crank /usr/local/bin/crank /usr/local/bin/crank
WORKDIR /src
COPY . .
RUN CRANK=/usr/local/bin/crank ./package/pgo.sh \
    && ./package/rootfs.sh target/x86_64-unknown-linux-gnu/release/function-starlark /rootfs

FROM scratch
COPY --from=build /rootfs/ /
LABEL org.opencontainers.image.title="function-starlark" \
      org.opencontainers.image.description="Crossplane composition function running Starlark scripts" \
      org.opencontainers.image.licenses="Apache-2.0"
USER 65532:65532
EXPOSE 9443
ENTRYPOINT ["/function-starlark"]
