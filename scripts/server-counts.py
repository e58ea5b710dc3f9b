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
paths; --reviews N (default 4,000) is the longer of the two measured
intervals. Needs valgrind (callgrind_control); about 25 s a config.
"""

import collections
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

from callgrind_records import records

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
SERVER = os.path.join(TARGET, "profiling", "celhook")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "perf")
REVIEW = os.path.join(FIXTURES, "review-create.json")
# The function every review's answer goes through, inline or in a round.
ANSWER = "celhook::server::routes::answer_admission"
# What the server gets for `--inline-budget`.
INLINE_BUDGET = "10s"


def loadtest():
    for profile in ("release", "profiling"):
        path = os.path.join(TARGET, profile, "celhook-loadtest")
        if os.path.exists(path):
            return path
    sys.exit("celhook-loadtest is missing: cargo build --release -p celhook-loadtest")


def parse(path):
    """Exclusive instructions per function, and the calls of ANSWER with
    their inclusive instructions, from a callgrind dump without
    per-instruction data (cost lines: position, instructions)."""
    own = collections.Counter()
    answers, answer_cost = 0, 0
    for kind, function, callee, fields in records(path):
        into_answer = callee == ANSWER and function != ANSWER
        if kind == "calls":
            answers += int(fields[0]) if into_answer else 0
        elif kind == "call":
            answer_cost += int(fields[1]) if into_answer and len(fields) > 1 else 0
        elif len(fields) > 1:
            own[function] += int(fields[1])
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


def run(args, what):
    """Runs a helper command, exiting with its output when it fails."""
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        sys.exit(f"{what} did not finish in 10 minutes: {' '.join(args)}")
    if done.returncode != 0:
        sys.exit(f"{what} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout


def measure(config, reviews, work, index):
    """Per-review instructions of the server on `config`.

    Two measured intervals, of `reviews` // 4 and of `reviews` reviews,
    each from its own load tool run after a warm-up: the difference of the
    two is `reviews` * 3/4 reviews and nothing else, since both hold the
    same fixed work (four TLS handshakes, one scrape of /metrics).
    `callgrind_control` returns once its dump is written, before the next
    load starts, so each interval is whole; idle timer work between them
    (the config reload's check) grows with wall time and is not cancelled,
    but is a few hundred instructions a second. The reviews
    are counted from the server's own request histogram. The server runs
    with a long `--inline-budget`, so that no review is abandoned and run
    again on the evaluation pool; retries, if any, are reported."""
    directory = config if os.path.isabs(config) else os.path.join(FIXTURES, config)
    name = f"{index}-{os.path.basename(directory.rstrip('/'))}"
    log_path = os.path.join(work, f"{name}.log")
    out = os.path.join(work, f"{name}.callgrind")
    with open(log_path, "w", encoding="utf-8") as log:
        server = subprocess.Popen(
            ["valgrind", "--tool=callgrind", "--dump-instr=no",
             f"--callgrind-out-file={out}", SERVER, "serve", "--config", directory,
             "--listen", "127.0.0.1:0", "--log-format", "json",
             # Callgrind runs the server some 50 times slower: at the
             # default 1 ms, reviews would be abandoned and run again.
             "--inline-budget", INLINE_BUDGET],
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
        base = f"https://127.0.0.1:{port}"

        def send(n):
            result = json.loads(run(
                [loadtest(), "--insecure", "--url", f"{base}/validate?timeout=10s",
                 "--warmup", "0s", "-c", "4", "-n", str(n), "--format", "json", "-q",
                 "admission", "--review", REVIEW], "celhook-loadtest"))
            if result.get("failed"):
                sys.exit(f"{result['failed']} reviews failed: {result.get('errors')}")

        def answered():
            """(reviews answered, inline attempts retried) so far."""
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            text = urllib.request.urlopen(f"{base}/metrics", context=ctx, timeout=60).read().decode()
            count = lambda prefix: sum(float(l.split()[-1]) for l in text.splitlines()
                                       if l.startswith(prefix))
            return (count('celhook_request_duration_seconds_count{handler="validate"'),
                    count("celhook_admission_inline_retries_total"))

        def dump(tag):
            run(["callgrind_control", f"--dump={tag}", str(server.pid)], "callgrind_control")

        send(max(reviews // 8, 100))
        before = answered()
        dump("warm")
        send(reviews // 4)
        middle = answered()
        dump("short")
        send(reviews)
        after = answered()
        dump("long")
        answered()  # work for the last dump to land on
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=120)
        except subprocess.TimeoutExpired:
            server.kill()
    # Dumps are numbered in order: .1 is the warm-up, .2 the short interval,
    # .3 the long one.
    short, long = (os.path.join(work, f"{os.path.basename(out)}.{i}") for i in (2, 3))
    if not (os.path.exists(short) and os.path.exists(long)):
        sys.exit(f"callgrind wrote no dumps {short} and {long}: {sorted(os.listdir(work))}")
    (own_s, calls_s, answer_s), (own_l, calls_l, answer_l) = parse(short), parse(long)
    reviews_s, reviews_l = middle[0] - before[0], after[0] - middle[0]
    counted = reviews_l - reviews_s
    if counted <= 0 or calls_l == 0:
        sys.exit(f"no reviews between the dumps ({reviews_s}, {reviews_l}; calls of {ANSWER}: {calls_s}, {calls_l})")
    by_group = collections.Counter()
    for function in set(own_s) | set(own_l):
        by_group[group(function)] += own_l[function] - own_s[function]
    return {
        "reviews": int(counted),
        "retries": int((after[1] - middle[1]) + (middle[1] - before[1])),
        "calls": calls_l + calls_s,
        "answered": int(reviews_l + reviews_s),
        "total": (sum(own_l.values()) - sum(own_s.values())) / counted,
        "answer": (answer_l - answer_s) / counted,
        "groups": {g: c / counted for g, c in by_group.items()},
    }


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    args = sys.argv[1:]
    reviews = 4000
    if "--reviews" in args:
        at = args.index("--reviews")
        reviews = int(args[at + 1])
        del args[at:at + 2]
        if reviews < 40:
            sys.exit("--reviews: at least 40 (the short interval is a quarter of it)")
    configs = list(dict.fromkeys(args)) or ["core", "norules"]
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
    for config, r in results.items():
        if r["retries"]:
            print(f"\n`{config}`: {r['retries']} of {r['answered']:,} reviews were answered again after "
                  f"their inline attempt ran out of its {INLINE_BUDGET} ({r['calls']:,} calls of the answer "
                  f"path): the figures include that partial work.")
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
