# ambient-runner: one image serves all three runners (RUNNER_TYPE=claude | gemini-cli | codex-sdk).
#
# Versions come from the project's lock files: Python packages from requirements.lock (the Codex and Claude
# binaries ship inside their pinned wheels), the Gemini CLI from package-lock.json (npm ci).
# Build without a Docker engine: `make image` (deploy/image/build.sh, buildah). The base is a build arg; any
# Debian 13 (trixie) image works: the Gemini CLI needs Node.js >= 20.
ARG BASE_IMAGE=docker.io/library/debian:trixie-slim

# Stage 1: the Gemini CLI, exactly as package-lock.json pins it. npm (and Debian's ~400 node-* packages it needs)
# stays in this stage; the runner image gets node_modules and Node.js only.
FROM ${BASE_IMAGE} AS gemini-cli
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates nodejs npm \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /build
COPY package.json package-lock.json ./
# The optional build secret `cabundle` is the CA bundle of a TLS-intercepting egress proxy: used for the downloads
# only, never stored in a layer.
RUN --mount=type=secret,id=cabundle \
    if [ -s /run/secrets/cabundle ]; then export NPM_CONFIG_CAFILE=/run/secrets/cabundle; fi \
 && npm ci --omit=dev --no-audit --no-fund --loglevel=error

# Stage 2: the runner.
FROM ${BASE_IMAGE}

# System packages come from the base image's Debian release (and its security updates), so they are not pinned
# one by one. git and ripgrep are tools the coding agents call. No tini: the runner is PID 1, handles SIGTERM and
# reaps its children (it is a child subreaper).
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates python3 python3-venv nodejs git ripgrep \
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
    GIT_TERMINAL_PROMPT=0

WORKDIR /app

# Python: the project's runtime requirements (pyproject.toml), every version fixed by requirements.lock used as
# constraints, so the lock's test-only tools stay out of the image.
COPY requirements.lock pyproject.toml ./
RUN --mount=type=secret,id=cabundle \
    if [ -s /run/secrets/cabundle ]; then export PIP_CERT=/run/secrets/cabundle; fi \
 && python3 -m venv "$VIRTUAL_ENV" \
 && python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' \
      > /tmp/runtime-requirements.txt \
 && pip install --quiet --constraint requirements.lock --requirement /tmp/runtime-requirements.txt \
 && pip check && rm /tmp/runtime-requirements.txt

# The Gemini CLI from stage 1 (the bridge runs /app/node_modules/.bin/gemini).
COPY --from=gemini-cli /build/node_modules ./node_modules
COPY package.json package-lock.json ./

# The runner's code (.dockerignore keeps the context to main.py and the packages).
COPY . ./
# The Gemini CLI's system settings (rank above a repository's .gemini/settings.json): root's, read-only.
# The user is the platform's: uid 1001, group 0 (its init container chowns the workspace to 1001:0; OpenShift runs
# any uid in group 0), so what the runner writes is group-writable. The CLI state dirs sit at /app/<stateDir>, where
# the platform's operator mounts /workspace/<stateDir> (its sidecar uploads them); /app itself stays root's.
RUN python -m compileall -q /app \
 && python -c "from ambient_runner.bridges.gemini_cli.config import ensure_system_settings as e; assert e()" \
 && useradd --uid 1001 --gid 0 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin runner \
 && install -d -o 1001 -g 0 -m 2775 /workspace /var/lib/ambient-runner /app/.claude /app/.gemini /app/.codex

USER 1001:0
EXPOSE 8001
CMD ["python", "main.py"]
