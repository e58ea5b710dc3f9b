#!/usr/bin/env python3
"""Fails when the top-level modules of a crate import each other in a circle.

Reads every non-test source file of each crate named on the command line
(default: the product and the workspace crates), maps it to its top-level
module, and follows `crate::<module>` paths (in `use` lines and inline).
`cargo modules dependencies --acyclic` would do this from rustc's view, but
installing it builds rust-analyzer's crates, minutes of CI's two cores on
every fresh run; this text scan sees what the layout needs (imports that
run one way) in a fraction of a second.
"""
import collections
import os
import re
import sys

TEST_BLOCK = re.compile(r"#\[cfg\(test\)\]\s*mod tests\s*\{.*", re.S)
CRATE_PATH = re.compile(r"\bcrate::([a-z_][a-z0-9_]*)")


def graph(src):
    tops = set()
    for name in os.listdir(src):
        if name in ("lib.rs", "main.rs"):
            continue
        tops.add(name[:-3] if name.endswith(".rs") else name)
    edges = collections.defaultdict(set)
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(root, f), src).split(os.sep)
            if "tests" in rel or rel[-1] == "tests.rs":
                continue
            top = rel[0][:-3] if rel[0].endswith(".rs") else rel[0]
            if top in ("lib", "main"):
                continue
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                text = TEST_BLOCK.sub("", fh.read())
            for m in CRATE_PATH.findall(text):
                if m in tops and m != top:
                    edges[top].add(m)
    return edges


def circles(edges):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    roots = sys.argv[1:] or [
        "src", "crates/cel/src", "crates/json/src", "crates/schema/src", "loadtest/src",
    ]
    failed = False
    for src in roots:
        edges = graph(src)
        found = circles(edges)
        arrows = sum(len(v) for v in edges.values())
        if not found:
            print(f"{src}: {len(edges)} modules with imports, {arrows} arrows, no circle")
        for comp in found:
            failed = True
            print(f"{src}: import circle among {', '.join(comp)}:")
            for a in comp:
                print(f"  {a} -> {', '.join(sorted(b for b in edges[a] if b in comp))}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
