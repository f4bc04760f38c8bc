#!/usr/bin/env bash
# Runs the Python peer (a2a-sdk) on 127.0.0.1:PORT, in the foreground:
#
#   bench/peers/run-python.sh PORT [--no-streaming]
#
# exec, so this script's PID is the server's (one process: no reloader, no workers).
# Needs bench/peers/setup.sh first.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 PORT [--no-streaming]" >&2; exit 2; }
peers="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${SB_BENCH_CACHE:-$(cd "$peers/../.." && pwd)/target/bench-cache}"
py="$cache/peers-venv/bin/python"
[ -x "$py" ] || { echo "$0: no venv at $cache/peers-venv: run bench/peers/setup.sh" >&2; exit 1; }
export OTEL_INSTRUMENTATION_A2A_SDK_ENABLED=false  # the SDK's tracing decorators off
port=$1; shift
exec "$py" "$peers/python/server.py" --port "$port" "$@"
