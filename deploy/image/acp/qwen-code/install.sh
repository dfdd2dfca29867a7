#!/bin/sh
# The node_modules of the ACP_AGENT=qwen-code image (run by the Dockerfile's first stage, with npm on PATH):
# @qwen-code/qwen-code as package-lock.json here pins it, and the Node.js it runs on.
#
# Qwen Code is JavaScript (its bundle, with sharp's native packages for the build machine's CPU and libc as optional
# dependencies): it needs Node.js at run time, the Gemini image's, as deploy/image/node/ pins it, into
# ../../node/bin/node (the Dockerfile copies that folder to /usr/local/bin).
set -eu
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --loglevel=error
npm ci --prefix ../../node --no-audit --no-fund --loglevel=error
cp ../../node/node_modules/node-linux-*/bin/node ../../node/bin/node
HOME=$(mktemp -d) PATH="$(cd ../../node/bin && pwd):$PATH" node_modules/.bin/qwen --version
