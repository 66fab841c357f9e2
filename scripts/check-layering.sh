#!/usr/bin/env bash
# Keeps the layering of ARCHITECTURE.md true: domain crates depend on no transport or
# storage crate, and the domain modules of the services import no proto, Redis, NATS,
# sqlx or tonic types. Run by `make lint`.
set -euo pipefail
cd "$(dirname "$0")/.."

FORBIDDEN_CRATES='^(tokio|redis|async-nats|sqlx|tonic|tonic-prost|prost|axum|hyper|frontier-proto|frontier-platform)\b'
FORBIDDEN_PATHS='\b(frontier_proto|redis|async_nats|sqlx|tonic|prost|axum|hyper)::'
status=0

# Domain crates: their [dependencies] section.
for manifest in libs/rules/Cargo.toml libs/chessclock/Cargo.toml libs/glicko2/Cargo.toml libs/engine/Cargo.toml libs/pairing/Cargo.toml libs/fairplay/Cargo.toml; do
  deps=$(awk '/^\[dependencies\]/{on=1; next} /^\[/{on=0} on' "$manifest" | sed 's/[ .=].*//' | grep -v '^$' || true)
  if bad=$(grep -E "$FORBIDDEN_CRATES" <<<"$deps"); then
    echo "layering: $manifest depends on $bad (a domain crate has no I/O)" >&2
    status=1
  fi
done

# Domain modules of the services.
for module in services/game-session/src/game.rs services/clock/src/schedule.rs services/rating/src/model.rs; do
  [ -f "$module" ] || { echo "layering: $module is missing (update this list)" >&2; status=1; continue; }
  if bad=$(grep -nE "$FORBIDDEN_PATHS" "$module"); then
    echo "layering: $module reaches transport or storage types:" >&2
    echo "$bad" >&2
    status=1
  fi
done

exit $status
