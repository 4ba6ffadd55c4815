# The lvmh worker: one pi session per container, run by the bridge (docker/bridge/index.mjs) with the
# lvmh-agent plugin, dialling the daemon's agent socket. lvmh builds it through the Engine API (legacy
# builder) from the context in docker/context.ts: this file, docker/bridge/ with its node_modules
# (installed on the host by scripts/setup_pi.sh, since RUN steps have no registry access) and plugin/.
# BASE_IMAGE is a build argument so tests build offline from a local image (scripts/mkrootfs.sh).
ARG BASE_IMAGE=node:22-bookworm-slim
FROM ${BASE_IMAGE}

# git clones and pulls the repository (the clone helper runs this image) and serves pi's tools.
RUN command -v git >/dev/null 2>&1 || (apt-get update && apt-get install -y --no-install-recommends git ca-certificates \
    && rm -rf /var/lib/apt/lists/*)
# An empty named volume takes the ownership of the directory it is mounted on, so uid 1000 owns both
# volumes from their first use. Nothing may be put into /workspace itself: it would be copied into every
# new repo volume and make `git clone` into it fail.
RUN mkdir -p /workspace /pi-sessions /etc/lvmh /home/node && chown 1000:1000 /workspace /pi-sessions /home/node

COPY docker/bridge/ /bridge/
COPY plugin/ /plugin/

# Node does not read the system CA store; the TLS proxy of some networks needs this.
# NODE_COMPILE_CACHE (Node >= 22.1; ignored by older Node) keeps V8's compiled code of pi's modules, filled
# once here at build time, so each new session's bridge starts faster (pi's import dominates spawn time).
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
    HOME=/home/node \
    LVMH_PLUGIN_DIR=/plugin \
    LVMH_SESSION_DIR=/pi-sessions \
    NODE_COMPILE_CACHE=/var/cache/lvmh-node
RUN mkdir -p /var/cache/lvmh-node && cd /bridge \
    && (node -e 'import("@mariozechner/pi-coding-agent").catch(() => import("@earendil-works/pi-coding-agent")).catch(() => {})' || true) \
    && chown -R 1000:1000 /var/cache/lvmh-node
LABEL lvmh.managed="true" lvmh.kind="worker-image"
USER 1000:1000
WORKDIR /workspace
CMD ["node", "/bridge/index.mjs"]
