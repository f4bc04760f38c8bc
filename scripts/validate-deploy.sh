#!/usr/bin/env bash
# Validates the deployment files without a Docker engine or a cluster (we have neither):
#
#   k8s/        every kustomization (base = split stack, allinone, redis, overlays/*) is
#               rendered with `kubectl kustomize` (client side only, no cluster needed;
#               kubectl is on our machine image) and checked against the Kubernetes 1.33
#               schemas (PyPI kubernetes-validate, --strict: unknown fields fail)
#   compose     docker-compose.yml against the Compose Specification's JSON schema (the
#               copy PyPI check-jsonschema vendors, with its licence: --builtin-schema
#               vendor.compose-spec)
#   Caddyfile   `caddy validate` (Debian's caddy package, unpacked into the cache dir,
#               not installed)
#   our rules   scripts/validate_deploy.py: wiring (URLs, Services, Secrets, probes),
#               lock-down, scalability, and `switchboard serve --check` with every
#               container's own command line and environment; then it breaks the files
#               on purpose and fails unless each breakage is caught
#
# Needs target/debug/switchboard (or $SWITCHBOARD_BIN): scripts/test.sh builds it first.
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${XDG_CACHE_HOME:-$HOME/.cache}"
bin="${SWITCHBOARD_BIN:-./target/debug/switchboard}"
[ -x "$bin" ] || { echo "validate-deploy: $bin missing (cargo build -p switchboard)" >&2; exit 1; }

venv="$cache/switchboard-deploy-venv"
requirements="kubernetes-validate==1.37.0 check-jsonschema==0.39.0 pyyaml==6.0.3"
if [ "$(cat "$venv/.requirements" 2>/dev/null)" != "$requirements" ]; then
  python3 -m venv "$venv"
  # shellcheck disable=SC2086
  "$venv/bin/pip" install --quiet $requirements
  echo "$requirements" > "$venv/.requirements"
fi

command -v kubectl >/dev/null || {
  echo "validate-deploy: kubectl is needed to render the kustomizations (kubectl kustomize)" >&2
  exit 1
}

# Debian's caddy, unpacked rather than installed (no service, no root needed once the
# package lists are there). It is older than the image compose runs (caddy:2.8), so the
# Caddyfile sticks to directives both know.
caddy=$(command -v caddy || true)
if [ -z "$caddy" ]; then
  caddy_dir="$cache/switchboard-deploy-caddy"
  download() { (cd "$caddy_dir" && apt-get download caddy >/dev/null 2>&1); }
  if [ ! -x "$caddy_dir/usr/bin/caddy" ]; then
    rm -rf "$caddy_dir" && mkdir -p "$caddy_dir"
    if ! download; then
      sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
      $sudo apt-get update -qq
      download || { echo "validate-deploy: cannot download Debian's caddy package" >&2; exit 1; }
    fi
    dpkg-deb -x "$caddy_dir"/caddy_*.deb "$caddy_dir"
  fi
  caddy="$caddy_dir/usr/bin/caddy"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "-- kustomize + Kubernetes 1.33 schemas"
renders=()
for kustomization in $(find k8s -name kustomization.yaml | sort); do
  dir=$(dirname "$kustomization")
  out="$tmp/${dir//\//__}.yaml"
  kubectl kustomize "$dir" > "$out"
  "$venv/bin/kubernetes-validate" --quiet --strict -k 1.33 "$out"
  echo "$dir: $(grep -c '^kind:' "$out") objects valid"
  renders+=("$out")
done

echo "-- compose specification schema"
"$venv/bin/check-jsonschema" --builtin-schema vendor.compose-spec docker-compose.yml

echo "-- Caddyfile (caddy $("$caddy" version | cut -d' ' -f1))"
"$caddy" validate --adapter caddyfile --config deploy/Caddyfile 2>/dev/null

echo "-- our rules and serve --check per container"
"$venv/bin/python" scripts/validate_deploy.py "$bin" "${renders[@]}"
