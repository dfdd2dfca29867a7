#!/usr/bin/env bash
# Run a command in a mounted image root the way the pod runs it: root file system read-only, emptyDir-like tmpfs at
# /tmp, /workspace and /var/lib/ambient-runner, uid 1001 gid 0, the image's env and workdir, loopback-only network.
#   readonly-root.sh ROOTFS ENVFILE -- COMMAND...      (root; called by smoke.sh with a `buildah mount` path)
# Files for the command can be put in ROOTFS/tmp by the caller's STAGE_DIR (copied onto the tmpfs /tmp/smoke).
set -euo pipefail
root=$1 envfile=$2; shift 3
exec unshare --mount --net --propagation private bash -s "$root" "$envfile" "$@" <<'INNER'
set -euo pipefail
root=$1 envfile=$2; shift 2
ip link set lo up
mount --bind "$root" "$root"
mount -o remount,bind,ro "$root"
for dir in tmp workspace var/lib/ambient-runner; do mount -t tmpfs -o mode=1777,size=2g tmpfs "$root/$dir"; done
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
if [ -n "${STAGE_DIR:-}" ]; then mkdir -p "$root/tmp/smoke" && cp -r "$STAGE_DIR"/. "$root/tmp/smoke/"; fi
mapfile -t image_env < "$envfile"
exec chroot --userspec=1001:0 "$root" /usr/bin/env -i "${image_env[@]}" ${EXTRA_ENV:-} \
  /bin/sh -c 'cd /app && exec "$@"' sh "$@"
INNER
