#!/usr/bin/env bash
# Interop suite: drives an A2A server with the official clients
# (PyPI a2a-sdk 1.3.0 and npm @a2a-js/sdk 1.3.0, 1.0 and 0.3 modes; gRPC 1.0 in Python).
#
#   SWITCHBOARD_URL=http://127.0.0.1:8080 tests/interop/run.sh [python] [js]
#
# With no argument both suites run, side by side. Needs only python3 (with pip), node >= 20.11
# and npm. The Python packages go to a venv in the cache dir, reinstalled only
# when requirements.txt changes; JS packages come from package-lock.json (npm ci).
# The server must already be running. Exits non-zero if any suite fails.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export SWITCHBOARD_URL="${SWITCHBOARD_URL:-http://127.0.0.1:8080}"
SWITCHBOARD_URL="${SWITCHBOARD_URL%/}"
export PYTHONDONTWRITEBYTECODE=1
cache="${XDG_CACHE_HOME:-$HOME/.cache}/switchboard-interop"
wait_secs="${INTEROP_WAIT_SECS:-30}"

suites=("$@")
[ ${#suites[@]} -eq 0 ] && suites=(python js)
for s in "${suites[@]}"; do
  case "$s" in python|js) ;; *) echo "usage: $0 [python] [js]" >&2; exit 2 ;; esac
done

log() { printf '\n== %s\n' "$*"; }

mkdir -p "$cache"

# --- Python environment (scripts/lib/pyvenv.sh) -------------------------------------
# shellcheck source=SCRIPTDIR/../../scripts/lib/pyvenv.sh
. "$here/../../scripts/lib/pyvenv.sh"
py=""
setup_python() {
  ensure_venv "$cache/venv" "$here/python/requirements.txt" log && py="$PYVENV_PYTHON"
}

# --- wait for the server -------------------------------------------------------
wait_for_server() {
  local card="$SWITCHBOARD_URL/agents/echo/.well-known/agent-card.json"
  log "waiting up to ${wait_secs}s for $card"
  python3 - "$card" "$wait_secs" <<'EOF'
import sys, time, urllib.request
url, secs = sys.argv[1], float(sys.argv[2])
deadline = time.monotonic() + secs
while True:
    try:
        with urllib.request.urlopen(url, timeout=3) as r:
            if r.status == 200:
                sys.exit(0)
    except Exception as e:  # noqa: BLE001
        err = e
    if time.monotonic() > deadline:
        print(f'server not reachable at {url}: {err}', file=sys.stderr)
        sys.exit(1)
    time.sleep(0.5)
EOF
}

status=0
wait_for_server || exit 1

# The suites spend most of their time waiting on the agents' own pacing (slow turns,
# streams held open), so they run side by side and pytest spreads its tests over
# PYTEST_WORKERS processes (pytest-xdist); each suite's output is kept apart and printed
# whole, Python's first, so the log reads as if they had run one after the other.
pytest_workers="${PYTEST_WORKERS:-3}"
out="$(mktemp -d)"
# A suite still running when this script is stopped is stopped with it.
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$out"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

run_python() {
  if ! setup_python; then
    echo "Python setup failed" >&2; return 1
  fi
  log "Python suite (a2a-sdk) against $SWITCHBOARD_URL"
  # exec: the job's pid is the runner's own, for the EXIT trap above to stop.
  cd "$here/python" && exec "$py" -m pytest -p no:cacheprovider -n "$pytest_workers"
}

run_js() {
  if ! node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>20||(a===20&&b>=11)?0:1)'; then
    echo "node >= 20.11 is required (have $(node --version 2>/dev/null || echo none))" >&2; return 1
  fi
  log "JS suite (@a2a-js/sdk) against $SWITCHBOARD_URL"
  if ! (cd "$here/js" && npm ci --no-audit --no-fund --loglevel=error); then
    echo "npm ci failed" >&2; return 1
  fi
  cd "$here/js" && exec node --test --test-reporter=spec --test-concurrency=2 ./*.test.mjs
}

running=()
for s in "${suites[@]}"; do
  # A suite named twice runs once, as it always did.
  case " ${running[*]} " in *" $s:"*) continue ;; esac
  "run_$s" > "$out/$s.log" 2>&1 &
  running+=("$s:$!")
done
for entry in "${running[@]}"; do
  wait "${entry#*:}" || status=1
  cat "$out/${entry%%:*}.log"
done

if [ "$status" -eq 0 ]; then log "interop: all suites passed"; else log "interop: FAILURES"; fi
exit "$status"
