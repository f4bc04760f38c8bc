#!/usr/bin/env bash
# Installs what the benchmark peer servers need; safe to run before every benchmark.
#
#   bench/peers/setup.sh
#
# - python/requirements.txt into a venv at ${SB_BENCH_CACHE:-<repo>/target/bench-cache}/peers-venv,
#   rebuilt only when that file changes (scripts/lib/pyvenv.sh);
# - js/package-lock.json into js/node_modules with `npm ci`, rerun only when the lock file
#   changed since the last install (or node_modules is missing).
# Prints one line per thing it installs and nothing else on success. Exits non-zero with
# the reason when python3 (>= 3.11), node (>= 20.11) or npm is missing or an install fails.
set -euo pipefail

peers="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$peers/../.." && pwd)"
cache="${SB_BENCH_CACHE:-$repo/target/bench-cache}"

die() { echo "bench/peers/setup.sh: $*" >&2; exit 1; }

command -v python3 >/dev/null 2>&1 || die "python3 (>= 3.11, with venv or pip) is required for the Python peer"
python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || die "python3 >= 3.11 is required for the Python peer (have $(python3 --version 2>&1))"
command -v node >/dev/null 2>&1 || die "node (>= 20.11) is required for the JS peer"
command -v npm >/dev/null 2>&1 || die "npm is required for the JS peer"
node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>20||(a===20&&b>=11)?0:1)' \
  || die "node >= 20.11 is required for the JS peer (have $(node --version))"

# shellcheck source=SCRIPTDIR/../../scripts/lib/pyvenv.sh
. "$repo/scripts/lib/pyvenv.sh"
ensure_venv "$cache/peers-venv" "$peers/python/requirements.txt" echo \
  || die "installing $peers/python/requirements.txt failed"

lock_hash() { python3 -c 'import hashlib,sys;print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$1"; }
js="$peers/js"
stamp="$(lock_hash "$js/package-lock.json")"
if [ "$(cat "$js/node_modules/.bench-package-lock" 2>/dev/null)" != "$stamp" ]; then
  echo "installing npm packages into $js/node_modules"
  (cd "$js" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || die "npm ci in $js failed"
  echo "$stamp" > "$js/node_modules/.bench-package-lock"
fi
