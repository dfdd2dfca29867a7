# The image names, shared by build.sh and smoke.sh (sourced). One image per runner, and the all-in-one image:
#   ambient-runner-claude, ambient-runner-gemini-cli, ambient-runner-codex-sdk, ambient-runner (all)
# under IMAGE_REPO (default localhost/ambient-runner) with tag IMAGE_TAG (default dev).
IMAGE_REPO=${IMAGE_REPO:-localhost/ambient-runner}
IMAGE_TAG=${IMAGE_TAG:-dev}
IMAGE_KINDS=(gemini-cli codex-sdk claude all)

# image_name KIND: the image built with RUNNER_TYPE=KIND (all: the all-in-one image).
image_name() {
  case "$1" in
    all) echo "$IMAGE_REPO:$IMAGE_TAG" ;;
    claude|gemini-cli|codex-sdk) echo "$IMAGE_REPO-$1:$IMAGE_TAG" ;;
    *) echo "unknown image $1: one of ${IMAGE_KINDS[*]}" >&2; return 2 ;;
  esac
}
