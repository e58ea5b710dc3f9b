#!/usr/bin/env python3
"""Runs the README's quickstart as written: the service of the set-up
section (its binary from CELHOOK_BIN, as `cargo run --release -- serve`
would build it), then the Quickstart's curl command, whose answer must be
the JSON the README shows. Then Ctrl-C (SIGINT) must stop the service at
once. Run by .ci/run; exits non-zero with the difference on a mismatch.

    CELHOOK_BIN=target/debug/celhook scripts/readme-quickstart.py
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def blocks(text, heading):
    """The fenced blocks of the README section that starts at `heading`."""
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(\w+)\n(.*?)```", section, re.S)


def main():
    os.chdir(ROOT)
    readme = open("README.md").read()
    setup = next(body for lang, body in blocks(readme, "## Set-up") if lang == "sh")
    if "cargo run --release -- serve" not in setup:
        sys.exit("README set-up: no `cargo run --release -- serve`")
    quick = blocks(readme, "## Quickstart")
    curl = next(body for lang, body in quick if lang == "sh")
    expected = json.loads(next(body for lang, body in quick if lang == "json"))

    binary = os.environ.get("CELHOOK_BIN", "target/debug/celhook")
    server = subprocess.Popen([binary, "serve"], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 30
        while True:
            ready = subprocess.run(
                ["curl", "-sk", "-o", "/dev/null", "-w", "%{http_code}",
                 "https://127.0.0.1:8443/readyz"], capture_output=True, text=True)
            if ready.stdout == "200":
                break
            if server.poll() is not None or time.time() > deadline:
                sys.exit(f"the service did not become ready: {server.stderr.read()}")
            time.sleep(0.2)
        command = curl.replace("\\\n", " ")
        answer = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=True)
        got = json.loads(answer.stdout)
        if got != expected:
            print("README quickstart: the answer differs from the README's", file=sys.stderr)
            print(json.dumps(got, indent=2), file=sys.stderr)
            sys.exit(1)
        print("README quickstart: the answer is the README's")
        started = time.time()
        server.send_signal(signal.SIGINT)
        code = server.wait(timeout=5)
        print(f"README quickstart: Ctrl-C stopped the service in {time.time() - started:.2f} s (exit {code})")
    finally:
        if server.poll() is None:
            server.kill()


if __name__ == "__main__":
    main()
