#!/usr/bin/env bash
# The split deployment as local processes, no Docker needed:
#
#   scripts/local-cluster.sh up             # redis-server + every service, waits until healthy
#   scripts/local-cluster.sh down           # stops them
#   scripts/local-cluster.sh start ROLE     # one more process of ROLE; after a kill, it
#                                           # takes the dead one's port
#   scripts/local-cluster.sh restart-redis  # kill -9 Redis, start it again from its AOF
#
# Topology (override with env): GATEWAYS=2 TASKS=2 FANOUTS=2 DISPATCHERS=1 REGISTRIES=1
# WORKERS=1. Every process inherits SWITCHBOARD_* settings from the environment (e.g.
# SWITCHBOARD_WEBHOOK_ALLOW=127.0.0.1/32, SWITCHBOARD_CONFIG=file.toml). State lives in
# $CLUSTER_DIR (default .local-cluster); `$CLUSTER_DIR/processes` gets one line per
# process, `ROLE PID PORT` (PORT is "-" for workers, which listen on nothing), and logs
# go to $CLUSTER_DIR/logs. The binary is $SWITCHBOARD_BIN, or target/debug/switchboard
# built on demand.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=SCRIPTDIR/lib/apt.sh
. scripts/lib/apt.sh

dir="${CLUSTER_DIR:-.local-cluster}"
procs="$dir/processes"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

stop_pid() {
  local pid=$1
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}

down() {
  [ -f "$procs" ] || { echo "no cluster running in $dir"; return 0; }
  # Services all at once (each drains its connections), Redis last, so nothing logs a
  # lost backend on the way down.
  local pid stoppers=()
  for pid in $(awk '$1!="redis"{print $2}' "$procs"); do stop_pid "$pid" & stoppers+=($!); done
  # Only the stoppers: when `up` fails, Redis is a child of this shell too, and a bare
  # `wait` would wait for it forever.
  [ ${#stoppers[@]} -eq 0 ] || wait "${stoppers[@]}"
  for pid in $(awk '$1=="redis"{print $2}' "$procs"); do stop_pid "$pid"; done
  rm -f "$procs" "$dir/env"
  echo "cluster in $dir stopped"
}

wait_healthy() {
  local role=$1 port=$2 pid=$3
  for _ in $(seq 300); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "$role on port $port exited; its log:" >&2
      tail -n 30 "$dir/logs/$role-$port.log" >&2
      return 1
    fi
    "$bin" health "127.0.0.1:$port" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "$role on port $port did not become healthy in 30 s" >&2
  return 1
}

start_redis() {
  local port=$1
  # AOF with fsync every second: a crashed Redis loses at most ~1 s of transitions.
  redis-server --port "$port" --bind 127.0.0.1 --dir "$dir/redis" \
    --appendonly yes --appendfsync everysec --save "" \
    >> "$dir/logs/redis-$port.log" 2>&1 &
  echo "redis $! $port" >> "$procs"
  for _ in $(seq 100); do
    redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && return 0
    sleep 0.1
  done
  echo "redis-server did not start:" >&2
  tail -n 5 "$dir/logs/redis-$port.log" >&2
  return 1
}

# The port of a process of ROLE that is gone, so a replacement takes its place (the
# others know services by address, as they would by a Service name).
vacant_port() {
  local port pid alive
  for port in $(awk -v r="$1" '$1==r {print $3}' "$procs" | sort -u); do
    alive=0
    for pid in $(awk -v r="$1" -v p="$port" '$1==r && $3==p {print $2}' "$procs"); do
      kill -0 "$pid" 2>/dev/null && alive=1
    done
    [ "$alive" = 0 ] && { echo "$port"; return 0; }
  done
  return 0
}

start_service() {
  local role=$1 port=${2:-}
  [ -n "$port" ] || port=$(vacant_port "$role")
  [ -n "$port" ] || port=$(free_port)
  # A task-state service logs each worker attachment whatever RUST_LOG says: that line
  # is how start_worker knows a worker is ready (a count that only grows, unlike the
  # workers-attached gauge, which a killed worker's replacement may leave unchanged).
  local log="${RUST_LOG:-info}"
  [ "$role" = tasks ] && log="$log,sb_rpc::workers::session=info"
  RUST_LOG="$log" "$bin" serve --services "$role" --listen "127.0.0.1:$port" >> "$dir/logs/$role-$port.log" 2>&1 &
  local pid=$!
  echo "$role $pid $port" >> "$procs"
  wait_healthy "$role" "$port" "$pid"
}

attachments() {
  cat "$dir"/logs/tasks-*.log 2>/dev/null | grep -c "worker attached" || true
}

# A worker is ready once a task-state service logged one more attachment.
start_worker() {
  local before; before=$(attachments)
  "$bin" worker >> "$dir/logs/worker-$(date +%s%N).log" 2>&1 &
  echo "worker $! -" >> "$procs"
  for _ in $(seq 300); do
    [ "$(attachments)" -gt "$before" ] && return 0
    sleep 0.1
  done
  echo "the worker did not attach in 30 s" >&2
  return 1
}

up() {
  if [ -f "$procs" ]; then
    echo "a cluster is already running in $dir (scripts/local-cluster.sh down first)" >&2
    exit 1
  fi
  bin="${SWITCHBOARD_BIN:-}"
  if [ -z "$bin" ]; then
    cargo build --quiet -p switchboard
    bin=target/debug/switchboard
  fi
  bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
  ensure_command redis-server redis-server || { echo "redis-server missing and could not be installed: apt-get install -y redis-server" >&2; exit 1; }
  rm -rf "$dir/logs"
  mkdir -p "$dir/logs" "$dir/redis"
  dir=$(cd "$dir" && pwd); procs="$dir/processes"
  : > "$procs"

  local redis_port; redis_port=$(free_port)
  start_redis "$redis_port" || { down; exit 1; }
  export SWITCHBOARD_BACKEND="redis://127.0.0.1:$redis_port/0"

  declare -A ports
  local role n
  for role in registry tasks fanout dispatcher gateway; do
    case $role in
      registry) n=${REGISTRIES:-1} ;; tasks) n=${TASKS:-2} ;; fanout) n=${FANOUTS:-2} ;;
      dispatcher) n=${DISPATCHERS:-1} ;; gateway) n=${GATEWAYS:-2} ;;
    esac
    ports[$role]=""
    for _ in $(seq "$n"); do ports[$role]+="$(free_port) "; done
  done
  urls() { local out="" p; for p in $1; do out+="http://127.0.0.1:$p,"; done; echo "${out%,}"; }
  local first_gateway; first_gateway=$(echo ${ports[gateway]} | cut -d' ' -f1)
  export SWITCHBOARD_TASKS_URL; SWITCHBOARD_TASKS_URL=$(urls "${ports[tasks]}")
  export SWITCHBOARD_FANOUT_URL; SWITCHBOARD_FANOUT_URL=$(urls "${ports[fanout]}")
  export SWITCHBOARD_REGISTRY_URL; SWITCHBOARD_REGISTRY_URL=$(urls "${ports[registry]}")
  export SWITCHBOARD_DISPATCHER_URL; SWITCHBOARD_DISPATCHER_URL=$(urls "${ports[dispatcher]}")
  export SWITCHBOARD_PUBLIC_URL="${SWITCHBOARD_PUBLIC_URL:-http://127.0.0.1:$first_gateway}"
  # What `start` and `restart-redis` need later: the binary, the Redis port and every
  # setting the processes inherited.
  {
    echo "bin=$(printf %q "$bin")"
    echo "redis_port=$redis_port"
    local var
    for var in $(compgen -e | grep -E '^(SWITCHBOARD_|OTEL_|RUST_LOG$)'); do
      echo "export $var=$(printf %q "${!var}")"
    done
  } > "$dir/env"

  for role in registry tasks fanout dispatcher gateway; do
    for port in ${ports[$role]}; do
      start_service "$role" "$port" || { down; exit 1; }
    done
  done
  for _ in $(seq "${WORKERS:-1}"); do start_worker || { down; exit 1; }; done
  echo "switchboard cluster up: $SWITCHBOARD_PUBLIC_URL"
  echo "processes: $procs"
}

load_env() {
  [ -f "$dir/env" ] || { echo "no cluster running in $dir" >&2; exit 1; }
  dir=$(cd "$dir" && pwd); procs="$dir/processes"
  # shellcheck disable=SC1091
  . "$dir/env"
}

start() {
  load_env
  case "${1:-}" in
    worker) start_worker ;;
    registry|tasks|fanout|dispatcher|gateway) start_service "$1" ;;
    *) echo "usage: $0 start registry|tasks|fanout|dispatcher|gateway|worker" >&2; exit 2 ;;
  esac
}

restart_redis() {
  load_env
  local pid; pid=$(awk '$1=="redis"{print $2}' "$procs" | tail -n 1)
  kill -9 "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  start_redis "$redis_port"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  start) shift; start "$@" ;;
  restart-redis) restart_redis ;;
  *) echo "usage: $0 up|down|start ROLE|restart-redis" >&2; exit 2 ;;
esac
