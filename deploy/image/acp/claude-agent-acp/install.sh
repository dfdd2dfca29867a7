#!/bin/sh
# The node_modules of the ACP_AGENT=claude-agent-acp image (run by the Dockerfile's first stage, with npm on PATH):
# @agentclientprotocol/claude-agent-acp as package-lock.json here pins it, and the Node.js it runs on.
#
# claude-agent-acp is JavaScript that starts the Claude Code binary of the Claude Agent SDK's platform package (npm ci
# installs the one for the build machine's CPU and libc; a musl build beside the glibc one goes). Unlike opencode it
# needs Node.js at run time: the Gemini image's, as deploy/image/node/ pins it, into ../../node/bin/node (the
# Dockerfile copies that folder to /usr/local/bin). Its package asks for Node.js >= 22; it runs on the pinned 20 (the
# project's tests run it so).
set -eu
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --loglevel=error
for musl in node_modules/@anthropic-ai/claude-agent-sdk-linux-*-musl; do
  if [ -d "${musl%-musl}" ]; then rm -rf "$musl"; fi
done
npm ci --prefix ../../node --no-audit --no-fund --loglevel=error
cp ../../node/node_modules/node-linux-*/bin/node ../../node/bin/node
PATH="$(cd ../../node/bin && pwd):$PATH" node_modules/.bin/claude-agent-acp --version
HOME=$(mktemp -d) PATH="$(cd ../../node/bin && pwd):$PATH" node_modules/.bin/claude-agent-acp --cli --version
