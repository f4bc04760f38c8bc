#!/usr/bin/env bash
# The interop suite (tests/interop/run.sh) through bridged agents: `echo` and `consolidate`
# are `kind = "a2a"` agents of a Switchboard whose upstreams are written on an official
# SDK server (tests/interop/upstreams/):
#
#   tests/interop/bridged.sh python [SUITE...]   # a2a-sdk 1.3.0, A2A 1.0 (JSON-RPC + REST)
#   tests/interop/bridged.sh js [SUITE...]       # @a2a-js/sdk 1.3.0, A2A 0.3 only
#
# SUITE is passed to run.sh (python, js; both by default). DEPLOYMENT=split runs the
# Switchboard as scripts/local-cluster.sh's cluster (Redis, gateways, task-state and
# fan-out replicas, a worker) instead of all-in-one. SWITCHBOARD_BIN defaults to
# target/debug/switchboard. Installs what it needs (the upstream venv in
# ${XDG_CACHE_HOME:-~/.cache}/switchboard-interop/upstream-venv, rebuilt only when
# upstreams/python/requirements.txt changes; upstreams/js/node_modules from its
# package-lock.json, reinstalled only when that changes), starts one upstream process per
# agent and a Switchboard in front of them, all on free ports, runs the suite and stops
# everything on exit. Exits with the suite's status; on failure the logs' tails are
# printed and the logs kept.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
export PYTHONDONTWRITEBYTECODE=1

upstream="${1:-}"
case "$upstream" in
  python|js) shift ;;
  *) echo "usage: $0 python|js [python] [js]" >&2; exit 2 ;;
esac
bin="${SWITCHBOARD_BIN:-target/debug/switchboard}"
deployment="${DEPLOYMENT:-all-in-one}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/switchboard-interop"
agents=(echo consolidate)
[ -x "$bin" ] || { echo "no switchboard binary at $bin (cargo build, or set SWITCHBOARD_BIN)" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/switchboard-bridged.XXXXXX")"
pids=()      # every process started here
status=1

log() { printf '\n== %s\n' "$*"; }

cluster_up=0

cleanup() {
  local pid
  if [ "$cluster_up" -eq 1 ]; then
    CLUSTER_DIR="$work/cluster" bash scripts/local-cluster.sh down > /dev/null 2>&1
    [ "$status" -eq 0 ] || cp "$work"/cluster/logs/*.log "$work/" 2>/dev/null
  fi
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  done
  if [ "$status" -eq 0 ]; then
    rm -rf "$work"
  else
    local f
    for f in "$work"/*.log; do
      [ -f "$f" ] || continue
      printf '\n== last lines of %s\n' "$f" >&2
      tail -n 40 "$f" >&2
    done
    echo "logs kept in $work" >&2
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits up to $3 s for URL $1 to answer 200; fails early if process $2 died.
wait_for() {
  local url="$1" pid="$2" secs="$3" i
  for i in $(seq $((secs * 5))); do
    python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$url" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || { echo "the process serving $url exited" >&2; return 1; }
    sleep 0.2
  done
  echo "nothing answered at $url within ${secs}s" >&2
  return 1
}

# --- the upstreams -------------------------------------------------------------------
install_upstream() {
  case "$upstream" in
    python)
      # shellcheck source=SCRIPTDIR/../../scripts/lib/pyvenv.sh
      . "$root/scripts/lib/pyvenv.sh"
      ensure_venv "$cache/upstream-venv" "$here/upstreams/python/requirements.txt" log \
        && upstream_cmd=("$PYVENV_PYTHON" "$here/upstreams/python/upstream.py")
      ;;
    js)
      local dir="$here/upstreams/js" stamp
      stamp="$(python3 -c 'import hashlib,sys;print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$dir/package-lock.json")"
      if [ "$(cat "$dir/node_modules/.upstream-package-lock" 2>/dev/null)" != "$stamp" ]; then
        log "installing npm packages into $dir/node_modules"
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) || return 1
        echo "$stamp" > "$dir/node_modules/.upstream-package-lock"
      fi
      upstream_cmd=(node "$dir/upstream.mjs")
      ;;
  esac
}

declare -A upstream_port
start_upstreams() {
  local agent port
  for agent in "${agents[@]}"; do
    port="$(free_port)" || return 1
    upstream_port[$agent]=$port
    "${upstream_cmd[@]}" --agent "$agent" --port "$port" > "$work/upstream-$agent.log" 2>&1 &
    pids+=($!)
    wait_for "http://127.0.0.1:$port/.well-known/agent-card.json" $! 30 || return 1
  done
}

write_config() {
  local agent
  for agent in "${agents[@]}"; do
    cat <<EOF
[[agents]]
name = "$agent"
kind = "a2a"
url = "http://127.0.0.1:${upstream_port[$agent]}"
[agents.upstream]
stall_timeout_secs = 30

EOF
  done > "$work/switchboard.toml"
}

# --- Switchboard in front of them (sets SWITCHBOARD_URL) -------------------------------
start_switchboard() {
  local port
  port="$(free_port)" || return 1
  case "$deployment" in
    all-in-one)
      "$bin" serve --memory --config "$work/switchboard.toml" --default-agent echo \
        --webhook-allow 127.0.0.1/32 --listen "127.0.0.1:$port" > "$work/switchboard.log" 2>&1 &
      pids+=($!)
      ;;
    split)
      # The gateways open conversations upstream, the worker follows the upstream tasks.
      CLUSTER_DIR="$work/cluster" SWITCHBOARD_BIN="$bin" SWITCHBOARD_CONFIG="$work/switchboard.toml" \
        SWITCHBOARD_WEBHOOK_ALLOW=127.0.0.1/32 bash scripts/local-cluster.sh up > "$work/cluster-up.log" 2>&1 \
        || { cat "$work/cluster-up.log" >&2; return 1; }
      cluster_up=1
      port="$(awk '$1=="gateway"{print $3; exit}' "$work/cluster/processes")"
      SWITCHBOARD_URL="http://127.0.0.1:$port"
      wait_for "$SWITCHBOARD_URL/agents/echo/.well-known/agent-card.json" "$$" 60
      return
      ;;
    *) echo "DEPLOYMENT=$deployment is not supported (all-in-one, split)" >&2; return 1 ;;
  esac
  SWITCHBOARD_URL="http://127.0.0.1:$port"
  wait_for "$SWITCHBOARD_URL/agents/echo/.well-known/agent-card.json" "${pids[-1]}" 60
}

log "installing the $upstream upstream"
install_upstream || { echo "installing the $upstream upstream failed" >&2; exit 1; }
log "starting the $upstream upstreams (${agents[*]}) and Switchboard ($deployment)"
start_upstreams || exit 1
write_config
start_switchboard || exit 1
log "Switchboard at $SWITCHBOARD_URL; logs in $work"
SWITCHBOARD_URL="$SWITCHBOARD_URL" bash "$here/run.sh" "$@"
status=$?
exit "$status"
