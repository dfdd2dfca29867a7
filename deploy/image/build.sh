#!/usr/bin/env bash
# Build the runner images without a Docker engine: buildah (chroot isolation, vfs storage) as root.
#
#   deploy/image/build.sh                        # base (once, cached) + one image per runner + the all-in-one image
#   deploy/image/build.sh base                   # only the local Debian base image
#   deploy/image/build.sh gemini-cli codex-sdk   # these images (claude, gemini-cli, codex-sdk, acp-opencode,
#                                                  acp-claude-agent-acp, acp-qwen-code, acp-codex-acp, all)
#
# Each image is ./Dockerfile with the build arg RUNNER_TYPE: localhost/ambient-runner-<runner>:dev holds only that
# runner's CLI and SDK; localhost/ambient-runner-acp-<agent>:dev (RUNNER_TYPE=acp, ACP_AGENT=<agent>) only that ACP
# agent; localhost/ambient-runner:dev (RUNNER_TYPE=all) the three CLIs (names and build args: deploy/image/images.sh).
#
# No image registry is needed: the base is a Debian minbase made with debootstrap from the Debian mirror that apt
# uses and imported with `FROM scratch` + `ADD rootfs.tar /` (deploy/image/Containerfile.base). The runner image
# (./Dockerfile) is then built FROM that local base (build arg BASE_IMAGE).
set -euo pipefail
cd "$(dirname "$0")/../.."

SUITE=${DEBIAN_SUITE:-trixie}            # trixie: nodejs 20 (the Gemini CLI needs node >= 20), python 3.13
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE_IMAGE=${BASE_IMAGE:-localhost/debian-minbase:$SUITE}
# shellcheck source=deploy/image/images.sh
. deploy/image/images.sh
WORK=${IMAGE_WORK_DIR:-/var/tmp/ambient-runner-image}
export STORAGE_DRIVER=vfs BUILDAH_ISOLATION=chroot
BUILDAH=(buildah --storage-driver vfs)

need_tools() {
  command -v buildah >/dev/null && command -v debootstrap >/dev/null && return
  [ "$(id -u)" = 0 ] || { echo "build.sh: buildah and debootstrap are missing; run as root to install them" >&2; exit 1; }
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq buildah debootstrap >/dev/null
}

build_base() {
  if "${BUILDAH[@]}" inspect --type image "$BASE_IMAGE" >/dev/null 2>&1; then
    echo "base image $BASE_IMAGE exists"; return
  fi
  rm -rf "$WORK/rootfs" && mkdir -p "$WORK"
  echo "debootstrap --variant=minbase $SUITE from $MIRROR"
  debootstrap --variant=minbase "$SUITE" "$WORK/rootfs" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -20 "$WORK/debootstrap.log" >&2; exit 1; }
  # Slim the base: no apt lists, caches, docs or logs from the bootstrap.
  rm -rf "$WORK"/rootfs/var/lib/apt/lists/* "$WORK"/rootfs/var/cache/apt/*.bin \
    "$WORK"/rootfs/var/cache/apt/archives/*.deb "$WORK"/rootfs/usr/share/doc/* "$WORK"/rootfs/var/log/*
  tar -C "$WORK/rootfs" --numeric-owner -cf "$WORK/rootfs.tar" .
  cp deploy/image/Containerfile.base "$WORK/Containerfile"
  "${BUILDAH[@]}" bud --isolation chroot --layers=false -f "$WORK/Containerfile" -t "$BASE_IMAGE" "$WORK"
  rm -rf "$WORK/rootfs" "$WORK/rootfs.tar"
}

build_image() {
  local kind=$1 image secret=() args
  image=$(image_name "$kind")
  read -ra args <<<"$(image_build_args "$kind")"
  # A TLS-intercepting egress proxy needs its CA for pip/npm during the build; it is passed as a build secret,
  # used only by the RUN steps that download, and not stored in any layer.
  if [ -n "${BUILD_CA_BUNDLE:-}" ] || [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    secret=(--secret "id=cabundle,src=${BUILD_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}")
  fi
  echo "building $image (${args[*]})"
  "${BUILDAH[@]}" bud --isolation chroot --layers --format docker "${secret[@]}" --build-arg "BASE_IMAGE=$BASE_IMAGE" \
    "${args[@]}" -f Dockerfile -t "$image" .
  "${BUILDAH[@]}" images --format '{{.Name}}:{{.Tag}} {{.Size}}' "$image"
}

need_tools
if [ $# -eq 0 ]; then set -- "${IMAGE_KINDS[@]}"; fi
if [ "$*" = base ]; then build_base; exit 0; fi
for kind in "$@"; do image_name "$kind" >/dev/null || { echo "usage: $0 [base | ${IMAGE_KINDS[*]}...]" >&2; exit 2; }; done
build_base
for kind in "$@"; do build_image "$kind"; done
