"""Self cost per function in a callgrind file, per request: callgrind_self.py FILE REQUESTS [TOP].

callgrind_annotate attributes everything to the thread's entry point for files dumped
with callgrind_control, so this reads the format itself: a cost line belongs to the
current `fn=` unless it follows a `calls=` line (then it is that call's inclusive cost).
"""
import collections
import re
import sys

names = {}


def name(token):
    match = re.match(r"\((\d+)\)(?: (.*))?", token)
    if not match:
        return token
    ident, text = match.groups()
    if text:
        names[ident] = text
    return names.get(ident, ident)


def main():
    path, requests = sys.argv[1], float(sys.argv[2])
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 25
    costs = collections.Counter()
    current, after_call, total = None, False, 0
    with open(path, errors="replace") as lines:
        for line in lines:
            line = line.rstrip("\n")
            if line.startswith("fn="):
                current = name(line[3:])
            elif line.startswith("cfn="):
                name(line[4:])
            elif line.startswith("calls="):
                after_call = True
            elif line and (line[0].isdigit() or line[0] in "+-*"):
                fields = line.split()
                if len(fields) < 2:
                    continue
                if after_call:
                    after_call = False
                else:
                    costs[current] += int(fields[1])
                    total += int(fields[1])
    print(f"instructions per request: {total / requests:.0f} ({requests:.0f} requests)")
    for function, cost in costs.most_common(top):
        print(f"{cost / requests:9.0f} {100 * cost / total:5.1f}%  {function[:140]}")


main()
