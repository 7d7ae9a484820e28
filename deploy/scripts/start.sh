#!/bin/sh
# Starts one Tollgate node: applies migrations, then serves with the flags `npm start` uses. The container's entry
# point, the systemd unit's ExecStart and the compose services all run this.
#   start.sh [RUNTIME_DIR]   (default: the directory above this script's)
set -eu
runtime=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cli="$runtime/dist/bin/tollgate.js"
if [ "${TOLLGATE_ENV:-${NODE_ENV:-development}}" = production ] && [ -z "${TOLLGATE_MASTER_KEY:-}" ] && [ -z "${TOLLGATE_MASTER_KEY_FILE:-}" ]; then
  echo "tollgate: production needs TOLLGATE_MASTER_KEY_FILE (or TOLLGATE_MASTER_KEY)" >&2
  exit 1
fi
node "$cli" migrate >/dev/null
exec node --max-semi-space-size=32 "$cli" serve
