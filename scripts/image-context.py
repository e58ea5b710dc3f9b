#!/usr/bin/env python3
"""The image's build context: what `docker build .` sends after
.dockerignore, counted with the same patterns (Go's filepath.Match with
`**` for any depth). Fails above the limit (default 5 MB), and names the
largest files when it does. Run by .ci/run.

    scripts/image-context.py [--limit-mb 5]
"""
import argparse
import fnmatch
import os
import sys


def patterns(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                out.append(line.rstrip("/"))
    return out


def ignored(rel, pats):
    parts = rel.split("/")
    for p in pats:
        anywhere = p.startswith("**/")
        tail = p[3:] if anywhere else p
        for i in range(1, len(parts) + 1):
            prefix = "/".join(parts[:i])
            if fnmatch.fnmatchcase(prefix, p):
                return True
            if anywhere and fnmatch.fnmatchcase(parts[i - 1], tail):
                return True
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit-mb", type=float, default=5.0)
    args = ap.parse_args()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    os.chdir(root)
    pats = patterns(".dockerignore")
    files = []
    for dirpath, dirs, names in os.walk("."):
        rel_dir = os.path.normpath(os.path.relpath(dirpath, "."))
        dirs[:] = [
            d for d in dirs
            if not ignored(os.path.normpath(os.path.join(rel_dir, d)), pats)
        ]
        for n in names:
            rel = os.path.normpath(os.path.join(rel_dir, n))
            if not ignored(rel, pats):
                files.append((os.path.getsize(rel), rel))
    total = sum(s for s, _ in files)
    print(f"image build context: {len(files)} files, {total / 1e6:.2f} MB "
          f"(limit {args.limit_mb} MB)")
    if total > args.limit_mb * 1e6:
        for size, rel in sorted(files, reverse=True)[:10]:
            print(f"  {size / 1e6:8.2f} MB  {rel}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
