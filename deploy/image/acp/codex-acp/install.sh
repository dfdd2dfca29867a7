#!/bin/sh
# The node_modules of the ACP_AGENT=codex-acp image (run by the Dockerfile's first stage, with npm on PATH):
# @agentclientprotocol/codex-acp as package-lock.json here pins it, with its own @openai/codex (not the codex-sdk
# runner's binary), and the Node.js it runs on.
#
# codex-acp is JavaScript that starts the Codex binary of @openai/codex's platform package (npm ci installs the one
# for the build machine's CPU); it needs Node.js at run time: the Gemini image's, as deploy/image/node/ pins it, into
# ../../node/bin/node (the Dockerfile copies that folder to /usr/local/bin).
set -eu
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --loglevel=error
npm ci --prefix ../../node --no-audit --no-fund --loglevel=error
cp ../../node/node_modules/node-linux-*/bin/node ../../node/bin/node
for codex in node_modules/@openai/codex-linux-*/vendor/*/bin/codex; do HOME=$(mktemp -d) "$codex" --version; done
