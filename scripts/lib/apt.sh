# shellcheck shell=bash
# Sourced, not run: ensure_command, the Debian package bootstrap shared by scripts/test.sh,
# scripts/bench.sh and scripts/local-cluster.sh, so each works on a fresh machine.
#
#   ensure_command COMMAND PACKAGE
#
# Returns 0 at once when COMMAND is on PATH. Otherwise installs PACKAGE with apt-get
# (through sudo unless root), refreshing the package lists only if the first attempt
# fails (a fresh image has none), and returns non-zero if COMMAND is still missing.
ensure_command() {
  local command="$1" package="$2" sudo=""
  command -v "$command" >/dev/null 2>&1 && return 0
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing $package (for $command) with apt-get" >&2
  $sudo apt-get install -y -qq "$package" >/dev/null 2>&1 \
    || { $sudo apt-get update -qq && $sudo apt-get install -y -qq "$package"; } \
    || true
  command -v "$command" >/dev/null 2>&1
}
