# The lvmh daemon in a container. It drives the host's Docker engine through the mounted socket and builds
# the worker image (docker/worker.Dockerfile) from the files copied here, so the bridge's and the plugin's
# npm dependencies are installed at build time. See compose.yaml and the README.
# BASE_IMAGE is a build argument, as for the worker, so the image can be built from a local base too.
ARG BASE_IMAGE=node:22-bookworm-slim
FROM ${BASE_IMAGE}

ENV DENO_NO_UPDATE_CHECK=1 NO_COLOR=1 DENO_DIR=/opt/deno-cache \
    NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
# Deno comes from npm, pinned like the project's .tools (no JSR, no dl.deno.land).
RUN npm install -g --no-audit --no-fund deno@2.9.6 && deno --version

WORKDIR /app
COPY . .
# npm dependencies of the bridge (copied into every worker image; the plugin is one bundled file), then the
# daemon's own (the import map's npm: specifiers) and the island bundle, so the container starts offline.
RUN (cd docker/bridge && npm ci --no-audit --no-fund --omit=dev) \
    && deno install --entrypoint main.ts \
    && deno task build

ENV LVMH_HOST=0.0.0.0 \
    LVMH_PORT=8686 \
    LVMH_DATA_DIR=/data \
    LVMH_CONTAINER_DOCKER_SOCK=/var/run/docker.sock
VOLUME /data
EXPOSE 8686
CMD ["deno", "run", "--v8-flags=--no-allocation-site-pretenuring", "--allow-net", "--allow-env", "--allow-read", "--allow-write", "--allow-run", "--allow-sys", "main.ts"]
