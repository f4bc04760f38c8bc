"""Runs the README's tour, as written, against a running Switchboard.

Every ```sh and ```python block under the README's "A short tour" heading is taken from the
README itself (so the two cannot drift apart), with `localhost:8080` / `127.0.0.1:8080`
replaced by the server under test (SWITCHBOARD_URL). In the shell blocks each `curl` must
answer 2xx with a body that is not an error; a Python block must exit 0 and print a
completed task. Prints one line per check and closes with "readme-tour: N passed, M failed".

    SWITCHBOARD_URL=http://127.0.0.1:PORT python tests/readme/tour.py [README.md]

Run it with an interpreter that has the official client (a2a-sdk, the interop venv).
"""

import os
import re
import subprocess
import sys
import tempfile
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(HERE, '..', '..', 'README.md')

# Each curl of a shell block, checked where it runs; its output still goes to stdout.
CURL_CHECK = r'''
curl() {
  local out status
  out=$(command curl --fail-with-body --max-time 30 "$@" 2>&1); status=$?
  if [ $status -ne 0 ] || [ -z "$out" ] || printf '%s' "$out" | grep -q '"error"'; then
    printf 'readme-tour: FAIL curl %s (exit %s)\n%s\n' "$*" "$status" "$out"
    echo fail >> "$TOUR_RESULTS"
  else
    printf 'readme-tour: ok curl %.100s\n' "$*"
    echo pass >> "$TOUR_RESULTS"
  fi
}
'''


def tour_blocks(text):
    """(language, code) of each fenced block in the tour section."""
    start = text.index('\n## A short tour')
    end = text.find('\n## ', start + 1)
    section = text[start:end if end != -1 else len(text)]
    return re.findall(r'```(sh|python)\n(.*?)```', section, re.S)


def main():
    readme = sys.argv[1] if len(sys.argv) > 1 else README
    url = os.environ.get('SWITCHBOARD_URL', 'http://127.0.0.1:8080').rstrip('/')
    authority = urllib.parse.urlsplit(url).netloc
    blocks = tour_blocks(open(readme, encoding='utf-8').read())
    if not blocks:
        print('readme-tour: the README has no tour blocks')
        print('readme-tour: 0 passed, 1 failed')
        return 1
    passed = failed = 0
    for language, code in blocks:
        code = code.replace('localhost:8080', authority).replace('127.0.0.1:8080', authority)
        if language == 'sh':
            with tempfile.NamedTemporaryFile('r', suffix='.results') as results:
                env = dict(os.environ, TOUR_RESULTS=results.name)
                run = subprocess.run(['bash', '-c', CURL_CHECK + code], env=env,
                                     capture_output=True, text=True, timeout=120)
                print(run.stdout, end='')
                outcomes = results.read().split()
            if run.returncode != 0:
                print(f'readme-tour: FAIL the shell block exited {run.returncode}: {run.stderr}')
                outcomes.append('fail')
            passed += outcomes.count('pass')
            failed += outcomes.count('fail')
        else:
            run = subprocess.run([sys.executable, '-c', code], capture_output=True,
                                 text=True, timeout=120)
            ok = run.returncode == 0 and 'TASK_STATE_COMPLETED' in run.stdout
            print(f"readme-tour: {'ok' if ok else 'FAIL'} python block (exit {run.returncode})")
            if not ok:
                print(run.stdout[-2000:], run.stderr[-4000:])
            passed, failed = passed + ok, failed + (not ok)
    print(f'readme-tour: {passed} passed, {failed} failed')
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == '__main__':
    sys.exit(main())
