#!/usr/bin/env python3
"""What each rule of the perf CRD adds to a review, in instructions.

For every rule of tests/fixtures/perf/core (the peer workload's 17 rules and
2 transition rules), writes a copy of the CRD carrying that rule alone, and
one carrying none, then counts the admission hot path on each with callgrind
(examples/profile_hot_path: N = 2,001 iterations less N = 1, so the load is
left out). A rule's figure is its CRD's count less the rule-less one: the
rule's evaluation and the decoding of the fields it reads.

With `--without`, each copy carries every rule but one instead, and a
rule's figure is the whole CRD's count less that copy's: what the rule
adds among the others, whose fields, tables and walk it shares (the
figures then add up to the whole less what any rule at all costs).

    cargo build --profile profiling --example profile_hot_path
    scripts/rule-counts.py [create|update] [mode] [--without]

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
    args = [a for a in sys.argv[1:] if a != "--without"]
    without = len(args) < len(sys.argv) - 1
    op = args[0] if args else "create"
    mode = args[1] if len(args) > 1 else ""
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
        whole = per_review(write("all", rules), op, mode)
        how = f"{op}{', ' + mode if mode else ''}"
        if without:
            print(f"| rule (left out of the CRD) | instructions it adds among the others ({how}) |")
        else:
            print(f"| rule (alone on the CRD) | instructions over none ({how}) |")
        print("|---|---|")
        print(f"| none (the CRD without rules) | {base:,} per review |")
        added = 0
        for i, rule in enumerate(rules):
            if without:
                others = rules[:i] + rules[i + 1:]
                cost = whole - per_review(write(f"r{i:02}", others), op, mode)
                added += cost
            else:
                cost = per_review(write(f"r{i:02}", [rule]), op, mode) - base
            print(f"| `{rule['rule']}` | {cost:,} |")
        print(f"| all {len(rules)} together | {whole - base:,} |")
        if without:
            print(f"| what any rule at all costs (all together less the rules' own) | {whole - base - added:,} |")


if __name__ == "__main__":
    main()
