#!/usr/bin/env python3
"""What each rule of the perf CRD adds to a review, in instructions.

For every rule of tests/fixtures/perf/core (the peer workload's 17 rules and
2 transition rules), writes a copy of the CRD carrying that rule alone, and
one carrying none, then counts the admission hot path on each with callgrind
(examples/profile_hot_path: N = 2,001 iterations less N = 1, so the load is
left out). A rule's figure is its CRD's count less the rule-less one: the
rule's evaluation and the decoding of the fields it reads.

    cargo build --profile profiling --example profile_hot_path
    scripts/rule-counts.py [create|update] [mode]

`mode` is passed to profile_hot_path (`rules`: the evaluation alone).
Needs valgrind; takes about a minute.
"""

import copy
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
EXAMPLE = os.path.join(TARGET, "profiling", "examples", "profile_hot_path")
CRD = os.path.join(ROOT, "tests", "fixtures", "perf", "core", "appdeployment.yaml")


def count(config_dir, op, n, mode):
    """Instructions callgrind collects for `n` iterations."""
    args = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
            EXAMPLE, config_dir, op, str(n)] + ([mode] if mode else [])
    out = subprocess.run(args, capture_output=True, text=True, check=True).stderr
    found = re.search(r"Collected : (\d+)", out)
    if not found:
        sys.exit(f"no count from callgrind for {config_dir}:\n{out}")
    return int(found.group(1))


def per_review(config_dir, op, mode):
    return (count(config_dir, op, 2001, mode) - count(config_dir, op, 1, mode)) // 2000


def main():
    op = sys.argv[1] if len(sys.argv) > 1 else "create"
    mode = sys.argv[2] if len(sys.argv) > 2 else ""
    if not os.path.exists(EXAMPLE):
        sys.exit(f"{EXAMPLE} is missing: cargo build --profile profiling --example profile_hot_path")
    text = open(CRD, encoding="utf-8").read()
    crd = json.loads(text[text.index("{"):])  # JSON after the generator's comment
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    rules = spec.pop("x-kubernetes-validations")
    with tempfile.TemporaryDirectory() as work:
        def write(name, with_rules):
            d = os.path.join(work, name)
            os.mkdir(d)
            one = copy.deepcopy(crd)
            target = one["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            if with_rules:
                target["x-kubernetes-validations"] = with_rules
            with open(os.path.join(d, "crd.yaml"), "w", encoding="utf-8") as f:
                json.dump(one, f)
            return d

        base = per_review(write("none", None), op, mode)
        print(f"| rule (alone on the CRD) | instructions over none ({op}{', ' + mode if mode else ''}) |")
        print("|---|---|")
        print(f"| none (the CRD without rules) | {base:,} per review |")
        total = per_review(write("all", rules), op, mode) - base
        for i, rule in enumerate(rules):
            cost = per_review(write(f"r{i:02}", [rule]), op, mode) - base
            print(f"| `{rule['rule']}` | {cost:,} |")
        print(f"| all {len(rules)} together | {total:,} |")


if __name__ == "__main__":
    main()
