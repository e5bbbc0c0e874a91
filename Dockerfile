# celcost: the release binary on distroless/cc (glibc), run as non-root (65532).
# Build: `just image` (docker build -t celcost:latest . where a Docker engine runs; without one,
# hack/image.sh packs the same kind of binary — glibc, dynamically linked, built by
# `cargo build --release --locked` on Debian 12 — with its libraries into an OCI archive).
# Default command: the operator. The image's binary uses the system allocator (glibc, two arenas):
# at fleet size the operator holds less with it than with mimalloc, the CLI's (docs/operator.md).

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY crates ./crates
COPY benches ./benches
# src/fuzzing.rs includes an example CRD.
COPY examples ./examples
RUN cargo build --release --locked --features system-allocator --bin celcost \
 && cp target/release/celcost /celcost

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /celcost /celcost
USER 65532:65532
ENTRYPOINT ["/celcost"]
CMD ["controller"]
