# syntax=docker/dockerfile:1
# magnum-rs: the release binary in a small runtime image, run as a non-root user.
#
# Build:  docker build -t magnum-rs .
# Run:    docker run -e MAGNUM_RS_DATABASE_URL=mysql://… -e MAGNUM_RS_AUTH=keystone -p 9511:9511 magnum-rs
# Configuration defaults are in /etc/magnum-rs/magnum-rs.toml (etc/ of this repository);
# the database URL and credentials come from the environment (a Kubernetes Secret, see
# deploy/), never from the image. Where no container engine runs, scripts/image-steps.sh
# performs these same steps (builder commands, then the runtime stage as uid 10001 in a
# chroot) and checks /healthz; CI runs it.

FROM rust:1-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock build.rs ./
COPY src ./src
COPY migrations ./migrations
ENV CARGO_PROFILE_RELEASE_STRIP=symbols
RUN cargo build --release --locked --bin magnum-rs

FROM debian:bookworm-slim
RUN groupadd --system --gid 10001 magnum && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/magnum-rs --create-home --shell /usr/sbin/nologin magnum
COPY --from=build /src/target/release/magnum-rs /usr/local/bin/magnum-rs
COPY etc/magnum-rs.toml etc/policy.yaml.sample /etc/magnum-rs/
USER 10001:10001
WORKDIR /var/lib/magnum-rs
ENV MAGNUM_RS_CONFIG=/etc/magnum-rs/magnum-rs.toml MAGNUM_RS_BIND=0.0.0.0:9511 MAGNUM_RS_LOG_FORMAT=json
EXPOSE 9511
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 CMD ["/usr/local/bin/magnum-rs", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/magnum-rs"]
CMD ["serve"]
