#!/usr/bin/env bash
# Interop suite: drives an A2A server with the official clients
# (PyPI a2a-sdk 1.3.0 and npm @a2a-js/sdk 1.3.0, 1.0 and 0.3 modes; gRPC 1.0 in Python).
#
#   SWITCHBOARD_URL=http://127.0.0.1:8080 tests/interop/run.sh [python] [js]
#
# With no argument both suites run. Needs only python3 (with pip), node >= 20.11
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
want() { local s; for s in "${suites[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }

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

if want python; then
  if setup_python; then
    log "Python suite (a2a-sdk) against $SWITCHBOARD_URL"
    (cd "$here/python" && "$py" -m pytest -p no:cacheprovider) || status=1
  else
    echo "Python setup failed" >&2; status=1
  fi
fi

if want js && ! node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>20||(a===20&&b>=11)?0:1)'; then
  echo "node >= 20.11 is required (have $(node --version 2>/dev/null || echo none))" >&2; status=1
elif want js; then
  log "JS suite (@a2a-js/sdk) against $SWITCHBOARD_URL"
  if (cd "$here/js" && npm ci --no-audit --no-fund --loglevel=error); then
    (cd "$here/js" && node --test --test-reporter=spec --test-concurrency=2 ./*.test.mjs) || status=1
  else
    echo "npm ci failed" >&2; status=1
  fi
fi

if [ "$status" -eq 0 ]; then log "interop: all suites passed"; else log "interop: FAILURES"; fi
exit "$status"
