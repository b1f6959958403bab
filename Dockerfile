# syntax=docker/dockerfile:1
# The recipe of package/build.sh, for those with Docker: a static (musl)
# release binary (stripped, LTO, one codegen unit: [profile.release] in
# Cargo.toml) alone on an empty base with the CA bundle, as a non-root
# user, on port 9443. Unlike package/build.sh it skips the profile-guided
# build (package/pgo.sh drives the function with the crossplane CLI, which
# this image does not have): the binary works the same and runs slower
# (docs/architecture.md, "The shipped binary").

FROM rust:1.95-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends musl-tools \
    && rustup target add x86_64-unknown-linux-musl
WORKDIR /src
COPY . .
RUN cargo build --release --locked --target x86_64-unknown-linux-musl --bin function-starlark

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /src/target/x86_64-unknown-linux-musl/release/function-starlark /function-starlark
LABEL org.opencontainers.image.title="function-starlark" \
      org.opencontainers.image.description="Crossplane composition function running Starlark scripts" \
      org.opencontainers.image.licenses="Apache-2.0"
USER 65532:65532
EXPOSE 9443
ENTRYPOINT ["/function-starlark"]
