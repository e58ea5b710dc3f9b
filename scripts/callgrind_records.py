"""A callgrind output file read as records, for the scripts that count
from it (code-footprint.py, server-counts.py).

Callgrind names each function once, `fn=(7) name`, and by number after
that (`fn=(7)`); a `calls=` line is followed by the cost line of that
call, which is inclusive and so not the caller's own. Position columns
may be absolute or relative to the line before (`+3`, `-2`, `*`).
"""

import re

FUNCTION = re.compile(r"^(c?fn)=\((\d+)\)(?: (.*))?$")
POSITION = re.compile(r"^(0x[0-9a-f]+|[+-]?\d+|\*)\s")


def records(path):
    """Yields (kind, function, callee, fields) for each line that counts:
    kind "own" for the function's own cost line, "calls" for a `calls=`
    line (fields: its count and target), "call" for the inclusive cost
    line that follows it. Fields are the line's whitespace-split words."""
    names = {}
    function, callee, after_call = None, None, False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            found = FUNCTION.match(line)
            if found:
                kind, number, name = found.groups()
                if name:
                    names[number] = name
                if kind == "fn":
                    function = names.get(number)
                else:
                    callee = names.get(number)
                continue
            if line.startswith("calls="):
                after_call = True
                yield "calls", function, callee, line.split("=", 1)[1].split()
                continue
            if not POSITION.match(line):
                continue
            yield ("call" if after_call else "own"), function, callee, line.split()
            after_call = False
