#!/usr/bin/env bash
# Builds the Frontier image (deploy/docker/Dockerfile) where a Docker daemon answers, then
# checks it: the binary and each service answer --help as the image's user, and a service
# started from it serves /healthz with a read-only root filesystem (clock, against the
# Redis on the host's loopback: scripts/test-services.sh provides one).
#
#   scripts/build-image.sh [IMAGE]        (make image)
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=${1:-frontier:dev}
if ! docker info >/dev/null 2>&1; then
  echo "make image: NOT BUILT: no Docker daemon answers here (docker info failed)." >&2
  echo "  On a machine with Docker: docker build -f deploy/docker/Dockerfile -t $IMAGE ." >&2
  exit 1
fi
DOCKER_BUILDKIT=1 docker build -f deploy/docker/Dockerfile -t "$IMAGE" .
run() { docker run --rm --read-only --cap-drop ALL --security-opt no-new-privileges "$@"; }
run "$IMAGE" --help >/dev/null
for service in gateway game-session clock rating bot-worker matchmaking; do
  run "$IMAGE" "$service" --help >/dev/null
done
echo "image: $IMAGE: every service answers --help"
# /healthz of a running service: clock needs only Redis.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
name="frontier-image-check-$$"
scripts/test-services.sh bash -c "docker run -d --rm --name $name --network host --read-only --cap-drop ALL \
  -e FRONTIER_REDIS_URL=\$FRONTIER_TEST_REDIS_URL -e FRONTIER_NAMESPACE=imagecheck$$ \
  -e FRONTIER_ADMIN_LISTEN=127.0.0.1:$port $IMAGE clock >/dev/null
  trap 'docker stop $name >/dev/null 2>&1 || true' EXIT
  for _ in \$(seq 1 50); do
    if curl -fsS http://127.0.0.1:$port/healthz >/dev/null 2>&1; then echo 'image: clock serves /healthz'; exit 0; fi
    sleep 0.2
  done
  echo 'image: clock did not serve /healthz' >&2; docker logs $name >&2; exit 1"
