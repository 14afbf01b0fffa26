# syntax=docker/dockerfile:1
# One multi-stage build for everything of ours that compose.yaml runs:
#   target tamebi          the orchestrator                      (healthcheck: GET /healthz)
#   target mcp-nextcloud   the Nextcloud MCP server              (healthcheck: /healthz and the RFC 9728 metadata)
#   target mcp-mail        the mail MCP server (Nextcloud Mail through our app's bridge; same healthcheck)
#   target scripted-model  the scripted OpenAI-compatible model  (the default, so the stack starts with no key)
#   target nextcloud-app   the built Nextcloud app, copied into Nextcloud's custom_apps by an init service
#
# The build commands are the ones CI runs (scripts/test.d/60-deploy.sh checks that):
#   npm ci --no-audit --no-fund / npm run build   (scripts/install.d/40-island.sh, scripts/test.d/40-island.sh)
#   cargo build --workspace --bins                (the test harness; CI adds only the test-only
#                                                  feature tamebi/fault-injection)
# The dev profile is tuned for a server through CARGO_PROFILE_DEV_* instead of a second command.

ARG RUST_VERSION=1.95
ARG NODE_VERSION=20

# ---- the island (browser chat) bundle --------------------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS island
WORKDIR /src/island
COPY island/package.json island/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY island/ ./
RUN npm run build

# ---- the Nextcloud app, as package.sh lays it out ------------------------------------------
FROM busybox:1.37 AS nextcloud-app
COPY nextcloud-app/appinfo /app/tamebi/appinfo
COPY nextcloud-app/lib /app/tamebi/lib
COPY nextcloud-app/templates /app/tamebi/templates
COPY nextcloud-app/img /app/tamebi/img
COPY nextcloud-app/l10n /app/tamebi/l10n
COPY nextcloud-app/js /app/tamebi/js
COPY nextcloud-app/css /app/tamebi/css
COPY --from=island /src/island/dist/tamebi-island.js /app/tamebi/js/tamebi-island.js
COPY --from=island /src/island/dist/tamebi-island.css /app/tamebi/css/tamebi-island.css
COPY --from=island /src/island/dist/tamebi-admin.js /app/tamebi/js/tamebi-admin.js
COPY --from=island /src/island/dist/tamebi-admin.css /app/tamebi/css/tamebi-admin.css
COPY deploy/docker/prepare-volumes /usr/local/bin/prepare-volumes
# Runs once per `docker compose up`: a fresh app into its volume (an image upgrade is an app
# upgrade) and the secrets folder owned by Nextcloud's www-data (33), closed to everyone else.
CMD ["prepare-volumes"]

# ---- Rust: dependencies first (cached layer), then our code ----------------------------------
FROM rust:${RUST_VERSION}-bookworm AS builder
ENV CARGO_PROFILE_DEV_OPT_LEVEL=3 \
    CARGO_PROFILE_DEV_DEBUG=0 \
    CARGO_PROFILE_DEV_DEBUG_ASSERTIONS=false \
    CARGO_PROFILE_DEV_INCREMENTAL=false \
    CARGO_TERM_COLOR=never
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY mcp-servers/mcp-nextcloud/Cargo.toml mcp-servers/mcp-nextcloud/
COPY mcp-servers/mcp-mail/Cargo.toml mcp-servers/mcp-mail/
COPY dev/loadgen/Cargo.toml dev/loadgen/
COPY dev/scripted-model/Cargo.toml dev/scripted-model/
COPY dev/test-harness/Cargo.toml dev/test-harness/
COPY dev/probe-mcp/Cargo.toml dev/probe-mcp/
COPY dev/fault-proxy/Cargo.toml dev/fault-proxy/
COPY crates/telemetry-otlp/Cargo.toml crates/telemetry-otlp/
COPY crates/mcp-resource-server/Cargo.toml crates/mcp-resource-server/
COPY crates/g1-signing/Cargo.toml crates/g1-signing/
# Stub sources with the same targets, so this layer compiles only the dependencies and is reused
# until Cargo.toml or Cargo.lock change. The crate list is every workspace member (checked by
# deploy/ci/check_deploy.py, which also runs this stage's stubbing and loads the result).
COPY deploy/docker/stub-workspace /usr/local/bin/stub-workspace
RUN stub-workspace . mcp-servers/mcp-nextcloud mcp-servers/mcp-mail dev/loadgen dev/scripted-model dev/test-harness dev/probe-mcp dev/fault-proxy crates/telemetry-otlp crates/mcp-resource-server crates/g1-signing \
    && cargo build --workspace --bins \
    && rm -rf src benches tests mcp-servers dev crates
COPY . .
# COPY keeps the sources' old mtimes; touch them so cargo rebuilds over the stubs.
RUN find . -name '*.rs' -not -path './target/*' -exec touch {} + \
    && cargo build --workspace --bins \
    && mkdir -p /out \
    && cp target/debug/tamebi target/debug/mcp-nextcloud target/debug/mcp-mail target/debug/scripted-model /out/

# ---- the slim runtime every service shares ----------------------------------------------------
FROM debian:bookworm-slim AS runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    # Non-root; in group www-data (33) only to read the secrets file Nextcloud's hook writes (0640).
    && useradd --uid 10001 --user-group --groups www-data --home-dir /var/lib/tamebi --create-home tamebi \
    && mkdir -p /data && chown tamebi:tamebi /data
COPY deploy/docker/with-secrets /usr/local/bin/with-secrets
USER tamebi
WORKDIR /var/lib/tamebi

FROM runtime AS tamebi
COPY --from=builder /out/tamebi /usr/local/bin/tamebi
ENV TAMEBI_BIND=0.0.0.0:8700 TAMEBI_DATA_DIR=/data
EXPOSE 8700
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8700/healthz >/dev/null || exit 1
ENTRYPOINT ["with-secrets", "tamebi"]

FROM runtime AS mcp-nextcloud
COPY --from=builder /out/mcp-nextcloud /usr/local/bin/mcp-nextcloud
ENV MCP_BIND=0.0.0.0:8711 MCP_INDEX_PATH=/data/index.db
EXPOSE 8711
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8711/healthz >/dev/null \
     && curl -fsS http://127.0.0.1:8711/.well-known/oauth-protected-resource >/dev/null || exit 1
ENTRYPOINT ["mcp-nextcloud"]

FROM runtime AS mcp-mail
COPY --from=builder /out/mcp-mail /usr/local/bin/mcp-mail
ENV MCP_BIND=0.0.0.0:8712
EXPOSE 8712
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8712/healthz >/dev/null \
     && curl -fsS http://127.0.0.1:8712/.well-known/oauth-protected-resource >/dev/null || exit 1
ENTRYPOINT ["mcp-mail"]

FROM runtime AS scripted-model
COPY --from=builder /out/scripted-model /usr/local/bin/scripted-model
COPY dev/scripted-model/demo.json /etc/tamebi/demo.json
EXPOSE 8790
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8790/v1/models >/dev/null || exit 1
ENTRYPOINT ["scripted-model", "--bind", "0.0.0.0:8790", "--scripts", "/etc/tamebi/demo.json"]
