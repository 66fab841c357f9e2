#!/usr/bin/env bash
# Builds the Frontier image (deploy/docker/Dockerfile) where a Docker daemon answers, then
# checks it: the binary and each service answer --help as the image's user, and every
# service started from it (read-only root filesystem, no capabilities) serves /healthz and
# /readyz against the Redis, NATS and Postgres on the host's loopback
# (scripts/test-services.sh provides them; scripts/image-services-check.sh).
#
#   scripts/build-image.sh [IMAGE]        (make image)
#
# DOCKER names the client (default `docker`; it needs BuildKit: buildx, or a client with
# BuildKit built in such as Debian's docker.io `/usr/bin/docker`). scripts/image-offline.sh
# sets FRONTIER_IMAGE_CONTEXT (the build context, default the repository) and
# FRONTIER_IMAGE_BUILD_ARGS (extra `docker build` arguments).
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=${1:-frontier:dev}
DOCKER=${DOCKER:-docker}
if ! "$DOCKER" info >/dev/null 2>&1; then
  echo "make image: NOT BUILT: no Docker daemon answers here ($DOCKER info failed)." >&2
  echo "  On a machine with Docker: docker build -f deploy/docker/Dockerfile -t $IMAGE ." >&2
  exit 1
fi
context=${FRONTIER_IMAGE_CONTEXT:-.}
# shellcheck disable=SC2086 # FRONTIER_IMAGE_BUILD_ARGS is a list of arguments
DOCKER_BUILDKIT=1 "$DOCKER" build ${FRONTIER_IMAGE_BUILD_ARGS:-} -f "$context/deploy/docker/Dockerfile" -t "$IMAGE" "$context"
run() { "$DOCKER" run --rm --read-only --cap-drop ALL --security-opt no-new-privileges "$@"; }
run "$IMAGE" --help >/dev/null
for service in gateway game-session clock rating bot-worker matchmaking fairplay; do
  run "$IMAGE" "$service" --help >/dev/null
done
echo "image: $IMAGE: every service answers --help"
# Every service started from it as the chart runs it serves /healthz and /readyz.
DOCKER=$DOCKER scripts/test-services.sh scripts/image-services-check.sh "$IMAGE"
