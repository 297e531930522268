# A small image with chaudit alone: built with the Rust toolchain, run from a distroless base
# (glibc, CA certificates, no shell).
#   docker build -t chaudit .
#   docker run --rm -v /etc/clickhouse-server:/config:ro chaudit --config /config
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked && strip target/release/chaudit

FROM gcr.io/distroless/cc-debian12
COPY --from=build /src/target/release/chaudit /usr/local/bin/chaudit
USER nonroot
ENTRYPOINT ["/usr/local/bin/chaudit"]
