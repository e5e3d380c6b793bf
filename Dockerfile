# syntax=docker/dockerfile:1
# appserver in a container: a multi-stage build (the Rust toolchain only in the first stage), a
# small Debian final image (glibc, as the release binaries), a non-root user, the workspace on a
# volume and a healthcheck on /readyz.
#
#   docker build -t appserver .
#   printf '%s' "$(openssl rand -hex 16)" > token
#   docker run -p 127.0.0.1:8080:8080 -v appserver-workspace:/workspace \
#       -v "$PWD/token:/run/secrets/appserver_token:ro" appserver
#
# Listening on 0.0.0.0 (inside the container) needs a WebSocket token: the default command reads
# it from /run/secrets/appserver_token. Arguments after the image name replace the default
# command (`docker run appserver --help`). compose.yaml runs three instances in cluster mode.

ARG RUST_VERSION=1.95
ARG DEBIAN_RELEASE=bookworm

FROM rust:${RUST_VERSION}-slim-${DEBIAN_RELEASE} AS build
WORKDIR /src
COPY . .
# The same install a user runs (README, "Install"); the registry and the target directory are
# cache mounts, so a rebuild after a change compiles only what changed.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo install --locked --path server --features cluster --root /out

FROM debian:${DEBIAN_RELEASE}-slim
# ca-certificates: the system's roots, which cluster mode's NATS TLS checks against (the model
# endpoint's TLS uses the roots built into the binary).
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --create-home --home-dir /home/appserver appserver \
    && mkdir /workspace \
    && chown appserver:appserver /workspace
COPY --from=build /out/bin/appserver /usr/local/bin/appserver
USER appserver
WORKDIR /workspace
# The workspace: the agent's files and .appserver/ (the SQLite state, config.toml, apps).
VOLUME /workspace
EXPOSE 8080
# /readyz answers 200 while writes can commit, 503 otherwise (docs/scaling.md, "Health and
# probes"); no token needed. bash's /dev/tcp, so the image needs no HTTP client.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8080 && printf 'GET /readyz HTTP/1.0\\r\\nHost: 127.0.0.1\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["appserver"]
CMD ["--listen", "ws://0.0.0.0:8080", "--workspace", "/workspace", "--ws-token-file", "/run/secrets/appserver_token"]
