#!/usr/bin/env bash
# Smoke-test the built image without a Docker engine: for each runner, `buildah run` the image (as its non-root
# user) with the offline scripted model on loopback, inside a network namespace that has only `lo` when possible,
# and check /ready, one POST /run ending in RUN_FINISHED, a clean SIGTERM stop, and installed packages == the lock.
#
#   deploy/image/smoke.sh [claude gemini-cli codex-sdk]
set -euo pipefail
cd "$(dirname "$0")/../.."

IMAGE=${IMAGE:-localhost/ambient-runner:dev}
if [ $# -gt 0 ]; then RUNNERS=("$@"); else RUNNERS=(claude gemini-cli codex-sdk); fi
BUILDAH=(buildah --storage-driver vfs)

"${BUILDAH[@]}" inspect --type image "$IMAGE" >/dev/null 2>&1 || { echo "no image $IMAGE: run make image" >&2; exit 1; }
# Loopback only: the smoke run needs no network (scripted model on 127.0.0.1).
ISOLATE=()
if unshare -n true 2>/dev/null; then ISOLATE=(unshare -n); else echo "smoke: no network namespace here" >&2; fi

# The pod's readiness probe command, run inside the container once the runner is ready (with AGUI_TOKEN set).
PROBE=$(.venv/bin/python -c 'import json, yaml
pod = yaml.safe_load(open("deploy/runner-pod-template.yaml"))["template"]["spec"]["containers"][0]
print(json.dumps(pod["readinessProbe"]["exec"]["command"]))')

failed=0
for runner in "${RUNNERS[@]}"; do
  ctr=$("${BUILDAH[@]}" from --pull-never "$IMAGE")
  set +e
  out=$("${ISOLATE[@]}" bash -c '
      ip link set lo up 2>/dev/null || true
      exec "$@"' smoke "${BUILDAH[@]}" run --isolation chroot \
        --env RUNNER_TYPE="$runner" --env RUNNER_SCRIPTED_MODEL=true --env HOME=/tmp --env AGUI_HOST=127.0.0.1 \
        --env AGUI_TOKEN=smoke-token \
        -v "$PWD/deploy/image/smoke_client.py:/smoke/client.py:ro" -v "$PWD/requirements.lock:/smoke/requirements.lock:ro" \
        "$ctr" -- python /smoke/client.py --start-runner --lock /smoke/requirements.lock --probe "$PROBE" 2>"/tmp/smoke-$runner.log")
  rc=$?
  set -e
  "${BUILDAH[@]}" rm "$ctr" >/dev/null
  echo "$runner: ${out:-no report} (exit $rc)"
  if [ $rc -ne 0 ]; then failed=1; tail -20 "/tmp/smoke-$runner.log" >&2; fi
done

# The same run with the pod's read-only root file system (writable tmpfs only where the pod mounts emptyDirs).
if unshare --mount --net true 2>/dev/null; then
  stage=$(mktemp -d)
  cp deploy/image/smoke_client.py requirements.lock "$stage/"
  envfile=$(mktemp)
  "${BUILDAH[@]}" inspect --type image --format '{{range .OCIv1.Config.Env}}{{println .}}{{end}}' "$IMAGE" \
    | grep -v '^$' > "$envfile"
  for runner in "${RUNNERS[@]}"; do
    ctr=$("${BUILDAH[@]}" from --pull-never "$IMAGE")
    rootfs=$("${BUILDAH[@]}" mount "$ctr")
    set +e
    out=$(STAGE_DIR=$stage EXTRA_ENV="RUNNER_TYPE=$runner RUNNER_SCRIPTED_MODEL=true AGUI_HOST=127.0.0.1 AGUI_TOKEN=smoke-token RUNNER_STATE_ROOT=/var/lib/ambient-runner" \
      deploy/image/readonly-root.sh "$rootfs" "$envfile" -- python /tmp/smoke/smoke_client.py --start-runner \
      --lock /tmp/smoke/requirements.lock --probe "$PROBE" 2>"/tmp/smoke-ro-$runner.log")
    rc=$?
    set -e
    "${BUILDAH[@]}" umount "$ctr" >/dev/null; "${BUILDAH[@]}" rm "$ctr" >/dev/null
    echo "$runner (read-only root): ${out:-no report} (exit $rc)"
    if [ $rc -ne 0 ]; then failed=1; tail -20 "/tmp/smoke-ro-$runner.log" >&2; fi
  done
  rm -rf "$stage" "$envfile"
else
  echo "smoke: cannot make a mount namespace here; read-only root run skipped" >&2
fi

size=$("${BUILDAH[@]}" images --format '{{.Size}}' "$IMAGE")
echo "image $IMAGE: $size"
exit $failed
