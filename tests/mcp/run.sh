#!/usr/bin/env bash
# The MCP suite: the official MCP Python SDK (PyPI `mcp`) as the client of Switchboard's
# MCP server, over stdio (`switchboard mcp --url …`) and streamable HTTP (`/mcp`).
#
#   tests/mcp/run.sh                      # starts its own all-in-one (admin token set)
#   SWITCHBOARD_URL=http://… tests/mcp/run.sh [pytest args]   # against a running one
#
# Against a running one, MCP_WAIT_SECS=<its [mcp] wait_secs, under 5> also runs the MCP
# tasks tests over its /mcp (they need work that outlasts the wait); stdio runs them
# anyway, with its own wait.
#
# SWITCHBOARD_BIN defaults to target/debug/switchboard. The packages go to a venv in the
# cache dir, reinstalled only when requirements.txt changes.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export PYTHONDONTWRITEBYTECODE=1
bin="${SWITCHBOARD_BIN:-$root/target/debug/switchboard}"
[ -x "$bin" ] || { echo "no switchboard binary at $bin (cargo build, or set SWITCHBOARD_BIN)" >&2; exit 1; }
# Absolute: the suite runs from its own directory.
SWITCHBOARD_BIN="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
export SWITCHBOARD_BIN
# shellcheck source=../../scripts/lib/pyvenv.sh
. "$root/scripts/lib/pyvenv.sh"
ensure_venv "${XDG_CACHE_HOME:-$HOME/.cache}/switchboard-mcp/venv" "$here/requirements.txt" || exit 1
server=""
if [ -z "${SWITCHBOARD_URL:-}" ]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  export SWITCHBOARD_ADMIN_TOKEN="mcp-suite-admin-token-0123456789"
  export GUARDED_TOKEN="mcp-suite-guarded-token-0123456789"
  export OTHER_TOKEN="mcp-suite-other-token-0123456789"
  # Short enough for the MCP tasks tests' long work (5 s and more) to outlast it.
  export MCP_WAIT_SECS=3
  config="$(mktemp "${TMPDIR:-/tmp}/switchboard-mcp.XXXXXX.toml")"
  # The default agents, one that takes only its own bearer token, and one that asks
  # questions and takes two callers (each reaching only their own tasks).
  cat > "$config" <<TOML
[mcp]
wait_secs = $MCP_WAIT_SECS
[[agents]]
name = "echo"
kind = "echo"
[[agents]]
name = "conformance"
kind = "conformance"
card = "1.0"
[[agents]]
name = "consolidate"
kind = "consolidate"
[[agents]]
name = "guarded"
kind = "echo"
[[agents.auth.bearer]]
principal = "mcp-suite"
token = "$GUARDED_TOKEN"
[[agents]]
name = "guarded-consolidate"
kind = "consolidate"
[[agents.auth.bearer]]
principal = "mcp-suite"
token = "$GUARDED_TOKEN"
[[agents.auth.bearer]]
principal = "mcp-other"
token = "$OTHER_TOKEN"
TOML
  "$SWITCHBOARD_BIN" serve --config "$config" --listen "127.0.0.1:$port" --memory \
    --admin-token "$SWITCHBOARD_ADMIN_TOKEN" > "${TMPDIR:-/tmp}/switchboard-mcp-server.log" 2>&1 &
  server=$!
  trap 'kill $server 2>/dev/null; rm -f "$config"' EXIT
  export SWITCHBOARD_URL="http://127.0.0.1:$port"
  python3 - "$SWITCHBOARD_URL/healthz" <<'PY' || { echo "switchboard did not start" >&2; exit 1; }
import sys, time, urllib.request
for _ in range(100):
    try:
        urllib.request.urlopen(sys.argv[1], timeout=1); sys.exit(0)
    except Exception:
        time.sleep(0.1)
sys.exit(1)
PY
fi
# The tests spend most of their time waiting on the agents' pacing, so pytest-xdist spreads
# them over PYTEST_WORKERS processes (arguments given here come after, so `-n 0` undoes it).
cd "$here" && "$PYVENV_PYTHON" -m pytest -q -n "${PYTEST_WORKERS:-3}" "$@"
