# syntax=docker/dockerfile:1
# Multi-stage build: the release binary in a small runtime image, run as a non-root user.
FROM rust:1-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY migrations ./migrations
RUN cargo build --release --locked && strip target/release/magnum-rs

FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --home-dir /var/lib/magnum-rs --create-home magnum
COPY --from=build /src/target/release/magnum-rs /usr/local/bin/magnum-rs
COPY etc/magnum-rs.toml /etc/magnum-rs/magnum-rs.toml
USER magnum
WORKDIR /var/lib/magnum-rs
ENV MAGNUM_RS_CONFIG=/etc/magnum-rs/magnum-rs.toml \
    MAGNUM_RS_BIND=0.0.0.0:9511
EXPOSE 9511
# The database URL and the auth mode come from the environment (a Secret), never the image.
ENTRYPOINT ["/usr/local/bin/magnum-rs"]
CMD ["serve"]
