#!/usr/bin/env bash
# Validates the deployment files: the Kubernetes manifests against the Kubernetes
# schemas (PyPI kubernetes-validate, schemas shipped in the package), the configuration
# they carry against switchboard's own loader, and the compose file's structure.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${XDG_CACHE_HOME:-$HOME/.cache}/switchboard-deploy-venv"
if [ ! -x "$venv/bin/kubernetes-validate" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet kubernetes-validate==1.37.0 pyyaml
fi
"$venv/bin/kubernetes-validate" --strict -k 1.33 k8s/base/configmap.yaml k8s/base/service.yaml k8s/base/statefulset.yaml

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$venv/bin/python" - "$tmp" <<'PY'
import sys, yaml
out = sys.argv[1]
cm = yaml.safe_load(open("k8s/base/configmap.yaml"))
open(f"{out}/switchboard.toml", "w").write(cm["data"]["switchboard.toml"])
for path in ["k8s/base/kustomization.yaml", "k8s/overlays/dev/kustomization.yaml"]:
    doc = yaml.safe_load(open(path))
    assert doc["kind"] == "Kustomization", path
compose = yaml.safe_load(open("docker-compose.yml"))
svc = compose["services"]["switchboard"]
assert all(p.startswith("127.0.0.1:") for p in svc["ports"]), "compose ports must bind to 127.0.0.1"
assert "healthcheck" in svc, "compose service needs a healthcheck"
print("compose and kustomizations: ok")
PY
./target/debug/switchboard serve --check --config "$tmp/switchboard.toml"
