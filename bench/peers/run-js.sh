#!/usr/bin/env bash
# Runs the JS peer (@a2a-js/sdk on express) on 127.0.0.1:PORT, in the foreground:
#
#   bench/peers/run-js.sh PORT
#
# exec, so this script's PID is the server's (one node process). Needs bench/peers/setup.sh
# first.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 PORT" >&2; exit 2; }
peers="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[ -d "$peers/js/node_modules/@a2a-js/sdk" ] \
  || { echo "$0: no $peers/js/node_modules: run bench/peers/setup.sh" >&2; exit 1; }
export NODE_ENV=production
exec node "$peers/js/server.mjs" --port "$1"
