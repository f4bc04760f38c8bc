# shellcheck shell=bash
# Sourced, not run: ensure_venv, the Python venv bootstrap shared by tests/interop/run.sh,
# tests/python-worker.sh and bench/peers/setup.sh.
#
#   ensure_venv VENV_DIR REQUIREMENTS_FILE [SAY]
#
# Leaves the interpreter's path in PYVENV_PYTHON. VENV_DIR is (re)built only when the
# SHA-256 of REQUIREMENTS_FILE differs from the one recorded in VENV_DIR/.requirements;
# then SAY (a command or function, default echo) is called once with the line
# "installing Python requirements into VENV_DIR". Without `python3 -m venv` (Debian
# without python3-venv) the packages go to VENV_DIR/lib with pip --target, and
# VENV_DIR/bin/python is a wrapper that execs python3 with that PYTHONPATH. Returns
# non-zero if python3 or pip fails.
# shellcheck disable=SC2034 # PYVENV_PYTHON is the result, read by the caller
ensure_venv() {
  local venv="$1" req="$2" say="${3:-echo}" stamp
  PYVENV_PYTHON=""
  stamp="$(python3 -c 'import hashlib,sys;print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$req")" || return 1
  if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.requirements" 2>/dev/null)" = "$stamp" ]; then
    PYVENV_PYTHON="$venv/bin/python"; return 0
  fi
  "$say" "installing Python requirements into $venv"
  rm -rf "$venv"; mkdir -p "$(dirname "$venv")"
  if python3 -m venv "$venv" 2>/dev/null && [ -x "$venv/bin/pip" ]; then
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req" || return 1
  else
    # No venv/ensurepip (e.g. Debian without python3-venv): a plain --target dir.
    echo "python3 -m venv unavailable; installing with pip --target" >&2
    rm -rf "$venv"; mkdir -p "$venv/bin" "$venv/lib"
    PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --disable-pip-version-check \
      --target "$venv/lib" -r "$req" || return 1
    # shellcheck disable=SC2016 # $PYTHONPATH and $@ are for the wrapper, not for here
    printf '#!/bin/sh\nPYTHONPATH="%s${PYTHONPATH:+:$PYTHONPATH}" exec python3 "$@"\n' "$venv/lib" > "$venv/bin/python"
    chmod +x "$venv/bin/python"
  fi
  echo "$stamp" > "$venv/.requirements"
  PYVENV_PYTHON="$venv/bin/python"
}
