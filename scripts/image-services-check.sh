#!/usr/bin/env bash
# Starts every service from the image as the chart runs it (read-only root filesystem, no
# capabilities, no privilege escalation, the image's non-root user), configured like the
# chart's ConfigMap, against the Redis, NATS and Postgres of scripts/test-services.sh (host
# network), and waits for each to serve /healthz and /readyz (every dependency answers).
#
#   scripts/test-services.sh scripts/image-services-check.sh IMAGE      (scripts/build-image.sh)
set -euo pipefail
IMAGE=$1
DOCKER=${DOCKER:-docker}
: "${FRONTIER_TEST_RUN:?run me under scripts/test-services.sh}"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# A database of this run (test-services.sh drops ft_<run>_* at the end).
db="ft_${FRONTIER_TEST_RUN}_image"
psql "$FRONTIER_TEST_POSTGRES_URL" -qc "create database \"$db\"" >/dev/null
database_url="${FRONTIER_TEST_POSTGRES_URL%/*}/$db"

gateway=$(free_port) game_session=$(free_port) rating=$(free_port) matchmaking=$(free_port) fairplay=$(free_port)
env=(
  -e "FRONTIER_NAMESPACE=t${FRONTIER_TEST_RUN}-image"
  -e "FRONTIER_REDIS_URL=$FRONTIER_TEST_REDIS_URL"
  -e "FRONTIER_NATS_URL=$FRONTIER_TEST_NATS_URL"
  -e "FRONTIER_DATABASE_URL=$database_url"
  -e "FRONTIER_JWT_SECRET=$(head -c 48 /dev/urandom | base64)"
  -e "FRONTIER_GATEWAY_LISTEN=127.0.0.1:$gateway"
  -e "FRONTIER_GAME_SESSION_LISTEN=127.0.0.1:$game_session"
  -e "FRONTIER_RATING_LISTEN=127.0.0.1:$rating"
  -e "FRONTIER_MATCHMAKING_LISTEN=127.0.0.1:$matchmaking"
  -e "FRONTIER_FAIRPLAY_LISTEN=127.0.0.1:$fairplay"
  -e "FRONTIER_GAME_SESSION_URLS=http://127.0.0.1:$game_session"
  -e "FRONTIER_RATING_URL=http://127.0.0.1:$rating"
  -e "FRONTIER_MATCHMAKING_URL=http://127.0.0.1:$matchmaking"
  -e "FRONTIER_FAIRPLAY_URL=http://127.0.0.1:$fairplay"
)
containers=()
cleanup() {
  for c in "${containers[@]}"; do "$DOCKER" stop -t 5 "$c" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

declare -A admin
for service in rating fairplay game-session clock bot-worker matchmaking gateway; do
  admin[$service]=$(free_port)
  name="frontier-image-$service-$$"
  "$DOCKER" run -d --rm --name "$name" --network host --read-only --cap-drop ALL \
    --security-opt no-new-privileges "${env[@]}" -e "FRONTIER_ADMIN_LISTEN=127.0.0.1:${admin[$service]}" \
    "$IMAGE" "$service" >/dev/null
  containers+=("$name")
done

failed=0
for service in rating fairplay game-session clock bot-worker matchmaking gateway; do
  name="frontier-image-$service-$$"
  ok=""
  deadline=$((SECONDS + 60))
  while [ $SECONDS -lt $deadline ]; do
    if curl -fsS "http://127.0.0.1:${admin[$service]}/healthz" >/dev/null 2>&1 &&
       curl -fsS "http://127.0.0.1:${admin[$service]}/readyz" >/dev/null 2>&1; then ok=1; break; fi
    if [ "$("$DOCKER" inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" != true ]; then break; fi
    sleep 0.2
  done
  user=$("$DOCKER" exec "$name" id -u 2>/dev/null || "$DOCKER" inspect -f '{{.Config.User}}' "$name")
  if [ -n "$ok" ]; then
    echo "image: $service serves /healthz and /readyz (read-only root, no capabilities, user $user)"
  else
    echo "image: $service did not become ready:" >&2
    "$DOCKER" logs "$name" 2>&1 | tail -20 >&2 || true
    failed=1
  fi
done
exit $failed
