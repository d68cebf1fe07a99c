# syntax=docker/dockerfile:1
#
# carrier-sync container image.
#
#   docker build -t carrier-sync .
#   docker run -d --hostname carrier-sync --stop-timeout 45 --env-file /etc/carrier-sync/env \
#     -v carrier-sync-spool:/spool -p 8080:8080 carrier-sync
#
# The image has no redis-server: set REDIS_URL (see compose.yaml); without it, start and every
# command say so in one line and exit 2. Build with `docker build`, or `podman build --format
# docker` (podman's default OCI format drops the HEALTHCHECK). Secrets (CARRIER_SYNC_CARRIER_KEY,
# …) come from the environment or <VAR>_FILE at run time, never from the image. Give `docker stop`
# more time than the shutdown grace period (shutdown.graceMs, 30 s): --stop-timeout 45, or
# `stop_grace_period: 45s` in compose. A fixed --hostname keeps the watcher's spool id stable
# across re-created containers. See docs/production-redis.md.
#
# Only the files the build needs are copied (no `COPY . .`), so a local node_modules/, dist/,
# spool/ or var/ never ends up in the image even without a .dockerignore.

# ---- build: all dependencies, TypeScript → dist/ ------------------------------------------------
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the `prepare` script (tsc) needs the sources, which are not copied yet; the
# build runs explicitly below. Keeping the install in its own layer caches it across source edits.
# `npm ls` after `npm ci`: the npm that Node 20 bundles can exit 0 after a registry failure ("Exit
# handler never called!"), which would cache a layer with a half-installed node_modules; `npm ls`
# exits non-zero when a package of the lockfile is missing, so the step, and the build, fail.
# The secret `npm-ca` (optional; `--secret id=npm-ca,src=ca.pem`) is for a network whose TLS goes
# through a proxy with its own CA: it reaches npm for this step only, never a layer.
RUN --mount=type=cache,target=/root/.npm --mount=type=secret,id=npm-ca \
    NODE_EXTRA_CA_CERTS=/run/secrets/npm-ca npm ci --ignore-scripts --no-audit --no-fund \
    && npm ls --all >/dev/null
COPY tsconfig.json ./
COPY src ./src
COPY config ./config
RUN npm run build

# ---- prod-deps: production dependencies only ----------------------------------------------------
# A clean install rather than `npm prune`, so no dev-only file can leak into the runtime image.
# --ignore-scripts again: `prepare` would run tsc, which is a devDependency. No production
# dependency needs an install script (msgpackr-extract ships prebuilt binaries and msgpackr falls
# back to plain JS without them). prune-runtime.mjs then removes what `--omit=dev` keeps but the
# runtime never loads: optional peers that are our devDependencies (TypeScript, 24 MB, valibot's
# optional peer through @bull-board/api), source maps and type declarations (29 MB); see its
# header. `npm ls` before and after: a failed install, or a prune that took too much, fails here.
FROM node:20-bookworm-slim AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY deploy/image/prune-runtime.mjs /tmp/prune-runtime.mjs
RUN --mount=type=cache,target=/root/.npm --mount=type=secret,id=npm-ca \
    NODE_EXTRA_CA_CERTS=/run/secrets/npm-ca npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
    && npm ls --omit=dev --all >/dev/null \
    && node /tmp/prune-runtime.mjs /app \
    && npm ls --omit=dev --all >/dev/null \
    && test ! -e node_modules/typescript

# ---- runtime ------------------------------------------------------------------------------------
FROM node:20-bookworm-slim AS runtime
LABEL org.opencontainers.image.title="carrier-sync" \
      org.opencontainers.image.description="Spool-to-API daemon for the Delivery Logistics API" \
      org.opencontainers.image.licenses="MIT"
# MALLOC_TRIM_THRESHOLD_: the environment of the bin's shebang (docs/operations.md, "The daemon's
# memory"): glibc's malloc keeps its thresholds fixed (an allocation of 128 KB or more gets a
# mapping of its own, an arena gives back a free top of more than 1 MB) instead of raising them as
# a flood frees large blocks, so the threads' arenas do not keep what a flood left in them (flood
# peak ~150 MB instead of ~160 MB, ~116–123 MB after it instead of ~127–133 MB).
ENV NODE_ENV=production \
    CARRIER_SYNC_HTTP_HOST=0.0.0.0 \
    CARRIER_SYNC_SPOOL_DIR=/spool \
    MALLOC_TRIM_THRESHOLD_=1048576
WORKDIR /app
# Application files stay owned by root: the `node` user can read them, not change them.
# package.json is needed at run time: the code finds config/ (default.yaml, sandbox-seed.json)
# from the folder holding it.
COPY package.json package-lock.json ./
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY config ./config
# The spool belongs to the unprivileged `node` user (uid 1000 in the official image); a named
# volume mounted at /spool takes this ownership on first use. A bind mount must be writable by
# uid 1000. The daemon writes nothing outside the spool (with REDIS_URL set; the image has no
# redis-server to run a managed one), so the container runs with a read-only root filesystem
# (`docker run --read-only`, Kubernetes `readOnlyRootFilesystem: true`).
RUN mkdir -p /spool && chown node:node /spool
USER node
VOLUME /spool
# Ops HTTP server: /healthz, /readyz, /metrics, /ui, POST /events.
EXPOSE 8080
# Liveness of the ops server, with node itself (the slim image has no curl or wget). A container
# started without the `http` role (e.g. `start --roles worker`) has nothing listening here:
# disable the check for it (compose: `healthcheck: { disable: true }`, docker run: --no-healthcheck).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.CARRIER_SYNC_HTTP_PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1)).catch(() => process.exit(1))"]
# Exec form: node is PID 1 and receives SIGTERM/SIGINT from `docker stop` itself (no shell in
# between); the daemon installs its own handlers, finishes in-flight work within
# shutdown.graceMs and exits 0, and a second signal exits at once. `docker run --init` (or
# `init: true` in compose) puts tini in front as PID 1 to reap stray children; signals are
# forwarded to node unchanged, so either way works.
STOPSIGNAL SIGTERM
# The node flags of the bin's shebang (BENCHMARKS.md, "Daemon memory"): --max-semi-space-size=4
# keeps V8's young generation at 4 MB semi-spaces instead of 16 MB it never gives back (idle RSS
# ~91 MB instead of ~110 MB); --heap-growing-percent=50 lets the old generation grow to 1.5× what
# was live at its last full GC instead of up to 4× (flood peak ~130 MB instead of ~200 MB).
# --v8-pool-size=1: one V8 helper thread (GC, optimising compiles) beside the daemon's two JS
# threads instead of four contending for the same cores (~4–9 MB less RSS at rest and after a flood).
ENTRYPOINT ["node", "--max-semi-space-size=4", "--heap-growing-percent=50", "--v8-pool-size=1", "dist/src/main.js"]
# Any other command works too: `docker run … carrier-sync status`, `… dlq list`, `… sandbox`.
CMD ["start"]
