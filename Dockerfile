# celcost: a static musl binary on distroless/static, run as non-root (65532).
# Build: `just image` (docker build -t celcost:latest .). Default command: the operator.

FROM rust:1.95-alpine AS build
RUN apk add --no-cache musl-dev
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY benches ./benches
# On Alpine the host target is x86_64/aarch64-unknown-linux-musl: statically linked by default.
RUN cargo build --release --locked --bin celcost \
 && cp target/release/celcost /celcost

FROM gcr.io/distroless/static:nonroot
COPY --from=build /celcost /celcost
USER 65532:65532
ENTRYPOINT ["/celcost"]
CMD ["controller"]
