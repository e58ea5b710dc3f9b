#!/usr/bin/env python3
"""Instructions per review of the real server, counted under callgrind.

The throughput ratio of issue 17 (17 rules against none, over HTTP/1.1
keep-alive) moves by a fifth from run to run on a shared VM; what the
server executes per review does not. This runs `celhook serve` (the
profiling build) under callgrind on 127.0.0.1 for each config, sends it
HTTP/1.1 keep-alive reviews with celhook-loadtest (TLS, the API server's
shape), and counts the user-space instructions of every server thread in
a measured interval: per review, all of them, the answer path
(`answer_admission`: decode, look up, evaluate, encode) and, by crate,
the rest (TLS, HTTP, runtime, logs). The kernel's share is not counted;
`scripts/bench-ratios.sh` reports the server's user and system CPU time
per review beside the throughput.

    cargo build --profile profiling --bin celhook
    cargo build --release -p celhook-loadtest
    scripts/server-counts.py [config ...] [--reviews N]

Configs are directories of tests/fixtures/perf (default: core norules) or
paths. Needs valgrind (callgrind_control); about half a minute a config.
"""

import collections
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
SERVER = os.path.join(TARGET, "profiling", "celhook")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "perf")
REVIEW = os.path.join(FIXTURES, "review-create.json")
# The function every review's answer goes through, inline or in a round.
ANSWER = "celhook::server::routes::answer_admission"
FUNCTION = re.compile(r"^(c?fn)=\((\d+)\)(?: (.*))?$")
POSITION = re.compile(r"^([+-]?\d+|\*)\s")


def loadtest():
    for profile in ("release", "profiling"):
        path = os.path.join(TARGET, profile, "celhook-loadtest")
        if os.path.exists(path):
            return path
    sys.exit("celhook-loadtest is missing: cargo build --release -p celhook-loadtest")


def parse(path):
    """Exclusive instructions per function, and the calls of ANSWER with
    their inclusive instructions, from a callgrind dump without
    per-instruction data."""
    names, own = {}, collections.Counter()
    answers, answer_cost = 0, 0
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
                if callee == ANSWER and function != ANSWER:
                    answers += int(line.split("=", 1)[1].split()[0])
                continue
            if not POSITION.match(line):
                continue
            fields = line.split()
            cost = int(fields[1]) if len(fields) > 1 else 0
            if after_call:
                # A call's inclusive cost, not the caller's own.
                after_call = False
                if callee == ANSWER and function != ANSWER:
                    answer_cost += cost
                continue
            own[function] += cost
    return own, answers, answer_cost


def group(function):
    """Where an instruction's function belongs: the crate of a Rust path,
    ring's assembly with ring, the C libraries together."""
    name = re.sub(r"^<", "", function or "?")
    if name.startswith(("ring_core", "_aesni", "aes_", "gcm_", "sha", "ChaCha")):
        return "ring"
    if "::" not in name:
        return "C: libc and mimalloc"
    return name.split("::", 1)[0].split(" as ", 1)[0]


def measure(config, reviews, work, index):
    """Per-review instructions of the server on `config`, from a dump
    taken after a warm-up and another after `reviews` more."""
    directory = config if os.path.isabs(config) else os.path.join(FIXTURES, config)
    name = f"{index}-{os.path.basename(directory.rstrip('/'))}"
    log_path = os.path.join(work, f"{name}.log")
    out = os.path.join(work, f"{name}.callgrind")
    with open(log_path, "w", encoding="utf-8") as log:
        server = subprocess.Popen(
            ["valgrind", "--tool=callgrind", "--dump-instr=no",
             f"--callgrind-out-file={out}", SERVER, "serve", "--config", directory,
             "--listen", "127.0.0.1:0", "--log-format", "json"],
            stdout=log, stderr=subprocess.STDOUT)
    try:
        port = None
        for _ in range(600):
            with open(log_path, encoding="utf-8", errors="replace") as log:
                for line in log:
                    try:
                        addr = json.loads(line).get("local_addr")
                    except ValueError:
                        continue
                    if addr:
                        port = addr.rsplit(":", 1)[1]
                        break
            if port or server.poll() is not None:
                break
            time.sleep(0.2)
        if not port:
            with open(log_path, encoding="utf-8", errors="replace") as log:
                sys.exit(f"celhook on {directory} did not start listening; its log:\n{log.read()}")
        url = f"https://127.0.0.1:{port}/validate?timeout=10s"

        def send(n):
            run = subprocess.run(
                [loadtest(), "--insecure", "--url", url, "--warmup", "0s", "-c", "4",
                 "-n", str(n), "--format", "json", "-q", "admission", "--review", REVIEW],
                capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"celhook-loadtest failed:\n{run.stdout}{run.stderr}")
            result = json.loads(run.stdout)
            if result.get("failed"):
                sys.exit(f"{result['failed']} reviews failed: {result.get('errors')}")

        def dump(tag):
            subprocess.run(["callgrind_control", f"--dump={tag}", str(server.pid)],
                           capture_output=True, text=True, check=True)

        send(max(reviews // 8, 100))
        dump("warm")
        send(reviews)
        dump("measured")
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=120)
        except subprocess.TimeoutExpired:
            server.kill()
    # Dumps are numbered in order: the second is the measured interval
    # (a dump is taken between two requests, and the reviews it holds are
    # counted from its own calls, so a late dump shifts no figure).
    dumps = sorted((p for p in os.listdir(work) if p.startswith(os.path.basename(out) + ".")),
                   key=lambda p: int(p.rsplit(".", 1)[1]) if p.rsplit(".", 1)[1].isdigit() else 0)
    measured = [p for p in dumps if p.endswith(".2")]
    if not measured:
        sys.exit(f"no measured dump in {work}: {dumps}")
    own, answers, answer_cost = parse(os.path.join(work, measured[0]))
    if answers == 0:
        sys.exit(f"no call of {ANSWER} in the measured interval (renamed or inlined?)")
    by_group = collections.Counter()
    for function, cost in own.items():
        by_group[group(function)] += cost
    total = sum(own.values())
    return {
        "reviews": answers,
        "total": total / answers,
        "answer": answer_cost / answers,
        "groups": {g: c / answers for g, c in by_group.items()},
    }


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    args = sys.argv[1:]
    reviews = 4000
    if "--reviews" in args:
        at = args.index("--reviews")
        reviews = int(args[at + 1])
        del args[at:at + 2]
    configs = args or ["core", "norules"]
    if not os.path.exists(SERVER):
        sys.exit(f"{SERVER} is missing: cargo build --profile profiling --bin celhook")
    results = {}
    with tempfile.TemporaryDirectory() as work:
        for index, config in enumerate(configs):
            results[config] = measure(config, reviews, work, index)
    print("| config | reviews counted | instructions a review | of which the answer path | the rest (TLS, HTTP, runtime, logs) |")
    print("|---|---|---|---|---|")
    for config, r in results.items():
        print(f"| `{config}` | {r['reviews']:,} | {r['total']:,.0f} | {r['answer']:,.0f} "
              f"| {r['total'] - r['answer']:,.0f} |")
    if len(results) >= 2:
        (a, ra), (b, rb) = list(results.items())[:2]
        print(f"\n`{b}` / `{a}`, instructions a review: {rb['total'] / ra['total']:.3f}; "
              f"`{a}` adds {ra['total'] - rb['total']:,.0f} a review "
              f"({ra['answer'] - rb['answer']:,.0f} in the answer path).")
    groups = sorted({g for r in results.values() for g in r["groups"]},
                    key=lambda g: -max(r["groups"].get(g, 0) for r in results.values()))
    print("\n| crate (exclusive, a review) | " + " | ".join(f"`{c}`" for c in results) + " |")
    print("|---|" + "---|" * len(results))
    for g in groups[:16]:
        print(f"| `{g}` | " + " | ".join(f"{r['groups'].get(g, 0):,.0f}" for r in results.values()) + " |")


if __name__ == "__main__":
    main()
