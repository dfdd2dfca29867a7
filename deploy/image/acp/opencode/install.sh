#!/bin/sh
# The node_modules of the ACP_AGENT=opencode image (run by the Dockerfile's first stage, with npm on PATH):
# opencode-ai as package-lock.json here pins it, then only its one binary is kept.
#
# opencode is one native executable (no Node.js at run time). npm ci installs every platform package that fits the
# build machine (x64: the AVX2 build and the baseline build, 185 MB each) and opencode-ai's postinstall links the one
# for this CPU into opencode-ai/bin/opencode.exe (node_modules/.bin/opencode). On x64 the image takes the baseline
# build, which runs on any x64 node, not only on CPUs like the build machine's; the platform packages then go.
set -eu
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --loglevel=error
binary=node_modules/opencode-ai/bin/opencode.exe
if [ -x node_modules/opencode-linux-x64-baseline/bin/opencode ]; then
  rm -f "$binary" && cp node_modules/opencode-linux-x64-baseline/bin/opencode "$binary" && chmod 755 "$binary"
fi
rm -rf node_modules/opencode-linux-* node_modules/opencode-darwin-* node_modules/opencode-windows-*
HOME=$(mktemp -d) node_modules/.bin/opencode --version
