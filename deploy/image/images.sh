# The image names, shared by build.sh and smoke.sh (sourced). One image per runner, one per ACP agent (RUNNER_TYPE=acp
# with ACP_AGENT=<agent>: kind acp-<agent>), and the all-in-one image (the three CLIs' runners, no ACP agent):
#   ambient-runner-claude, ambient-runner-gemini-cli, ambient-runner-codex-sdk, ambient-runner-acp-opencode,
#   ambient-runner-acp-claude-agent-acp, ambient-runner-acp-qwen-code,
#   ambient-runner-acp-codex-acp, ambient-runner (all)
# under IMAGE_REPO (default localhost/ambient-runner) with tag IMAGE_TAG (default dev). The ACP agents offered so far:
# opencode, claude-agent-acp, qwen-code and codex-acp.
IMAGE_REPO=${IMAGE_REPO:-localhost/ambient-runner}
IMAGE_TAG=${IMAGE_TAG:-dev}
IMAGE_KINDS=(gemini-cli codex-sdk claude acp-opencode acp-claude-agent-acp acp-qwen-code acp-codex-acp all)

# image_name KIND: the image built with RUNNER_TYPE=KIND (all: the all-in-one image).
image_name() {
  case "$1" in
    all) echo "$IMAGE_REPO:$IMAGE_TAG" ;;
    claude|gemini-cli|codex-sdk|acp-opencode|acp-claude-agent-acp|acp-qwen-code|acp-codex-acp) echo "$IMAGE_REPO-$1:$IMAGE_TAG" ;;
    *) echo "unknown image $1: one of ${IMAGE_KINDS[*]}" >&2; return 2 ;;
  esac
}

# image_build_args KIND: the Dockerfile's build args for the image (acp-<agent>: RUNNER_TYPE=acp, ACP_AGENT=<agent>).
image_build_args() {
  case "$1" in
    acp-*) echo "--build-arg RUNNER_TYPE=acp --build-arg ACP_AGENT=${1#acp-}" ;;
    *) echo "--build-arg RUNNER_TYPE=$1" ;;
  esac
}

# image_runners KIND: the RUNNER_TYPEs the image serves (all: the three CLIs' runners; acp-<agent>: acp, with
# ACP_AGENT=<agent>).
image_runners() {
  case "$1" in
    all) echo "claude gemini-cli codex-sdk" ;;
    acp-*) echo "acp" ;;
    *) echo "$1" ;;
  esac
}
