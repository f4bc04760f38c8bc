#!/usr/bin/env bash
# Installs the authorization server of the CLI's auth tests (oidc-provider, pinned by
# package-lock.json) into tests/oauth/node_modules, again only when the lock changes.
# Needs node >= 20.19 and npm. Then:
#   cargo test -p switchboard --test cli_oauth -- --ignored
set -euo pipefail
dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
stamp="$(python3 -c 'import hashlib,sys;print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$dir/package-lock.json")"
if [ "$(cat "$dir/node_modules/.installed-package-lock" 2>/dev/null)" != "$stamp" ]; then
  echo "installing oidc-provider into $dir/node_modules"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$stamp" > "$dir/node_modules/.installed-package-lock"
fi
