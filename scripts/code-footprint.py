#!/usr/bin/env python3
"""The code a review runs: distinct instruction bytes, in 64-byte cache lines.

A server answers each review between TLS, HTTP and kernel work and other
connections' reviews, so the code of the one before is mostly out of the
CPU's first-level caches and each review fetches its code again: what it
costs then follows how much distinct code it runs more than how many
instructions. This counts that code, as callgrind's instruction counts
count instructions: the same for the same binary and inputs, whatever the
machine is doing.

It runs examples/profile_hot_path under callgrind with per-instruction
counts twice, for 1 review and for 1 + N, and keeps the instructions that
ran at least N times more in the second run (at least once a review, the
loading left out). A line is a 64-byte block of the binary holding one of
them. Per function, the lines its own instructions fall in (inlined code
counts where it was inlined); per crate, by the function's path.

    cargo build --profile profiling --example profile_hot_path
    scripts/code-footprint.py [fixture-dir] [create|update] [N] [mode]
    scripts/code-footprint.py core create rules      # the evaluation alone

fixture-dir is one of tests/fixtures/perf (`core`, `norules`, ...) or an
absolute path; mode is passed to profile_hot_path (`rules`: the
evaluation alone); N (default 500) and mode may come in either order.
Needs valgrind; takes about half a minute.
"""

import collections
import os
import re
import signal
import subprocess
import sys
import tempfile

from callgrind_records import records

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
EXAMPLE = os.path.join(TARGET, "profiling", "examples", "profile_hot_path")
LINE = 64


def counts(args):
    """Self counts per instruction address, and the function of each."""
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "callgrind.out")
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", "--dump-instr=yes",
             f"--callgrind-out-file={out}", EXAMPLE] + args,
            capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"profile_hot_path {' '.join(args)} failed:\n{run.stdout}{run.stderr}")
        per_address, owner, address = collections.Counter(), {}, 0
        for kind, function, _, fields in records(out):
            if kind == "calls":
                continue
            where = fields[0]
            if where.startswith("0x"):
                address = int(where, 16)
            elif where[0] in "+-":
                address += int(where)
            # A call's cost line is inclusive: not this address's own.
            if kind == "own" and len(fields) >= 3:
                per_address[address] += int(fields[2])
                owner[address] = function
        return per_address, owner


def crate_of(function):
    """The crate in a Rust function's path; C functions (libc, mimalloc)
    together."""
    name = re.sub(r"^<", "", function or "?")
    if "::" not in name:
        return "C: libc and mimalloc"
    return name.split("::", 1)[0].split(" as ", 1)[0]


def main():
    # Piped into `head`, stop quietly.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    args = sys.argv[1:]
    fixture = args.pop(0) if args else "core"
    op = args.pop(0) if args else "create"
    if op not in ("create", "update", "update-applied"):
        sys.exit(f"operation {op!r}: create, update or update-applied")
    # N and the mode, in either order.
    numbers = [a for a in args if a.isdigit()]
    modes = [a for a in args if not a.isdigit()]
    if len(numbers) > 1 or len(modes) > 1:
        sys.exit(f"at most one N and one mode: {args}")
    n = int(numbers[0]) if numbers else 500
    if n < 1:
        sys.exit("N must be at least 1")
    mode = modes
    if not os.path.exists(EXAMPLE):
        sys.exit(f"{EXAMPLE} is missing: cargo build --profile profiling --example profile_hot_path")
    once, _ = counts([fixture, op, "1"] + mode)
    many, owner = counts([fixture, op, str(n + 1)] + mode)
    per_review = [a for a, c in many.items() if c - once.get(a, 0) >= n]
    lines = {a // LINE for a in per_review}
    by_function = collections.defaultdict(set)
    for a in per_review:
        by_function[owner.get(a)].add(a // LINE)
    by_crate = collections.defaultdict(set)
    for function, owned in by_function.items():
        by_crate[crate_of(function)] |= owned
    print(f"{fixture} {op}{' ' + mode[0] if mode else ''}: {len(per_review):,} instructions "
          f"run every review, in {len(lines):,} lines of {LINE} bytes ({len(lines) * LINE / 1024:.1f} KiB)")
    print("\n| crate | lines |\n|---|---|")
    for crate, owned in sorted(by_crate.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"| `{crate}` | {len(owned):,} |")
    print("\n| function | lines |\n|---|---|")
    for function, owned in sorted(by_function.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:25]:
        print(f"| `{(function or '?')[:100]}` | {len(owned):,} |")


if __name__ == "__main__":
    main()
