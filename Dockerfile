# syntax=docker/dockerfile:1
# Two stages: build the release binary (stripped, LTO, one codegen unit:
# see [profile.release] in Cargo.toml), then copy it alone onto a
# distroless base that has the C runtime and runs as a non-root user.

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin function-starlark

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/function-starlark /function-starlark
EXPOSE 9443
USER nonroot:nonroot
ENTRYPOINT ["/function-starlark"]
