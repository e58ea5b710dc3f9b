#!/usr/bin/env python3
"""The image's build context: what `docker build .` sends after
.dockerignore, counted with the same patterns (Go's filepath.Match with
`**` for any depth). Fails above the limit (default 5 MB), and names the
largest files when it does. Run by .ci/run, where no container engine
runs, so it also checks what would break the image build:

- every workspace file the crate was compiled from (`--dep-info`, the
  `.d` files cargo writes in target/debug/deps: sources and `include_str!`
  files; paths that no longer exist are stale entries, passed over) and
  every manifest and target file cargo reads to load the workspace
  (`cargo metadata`) is in the context;
- the Dockerfile builds the way the README's set-up does: one
  `cargo build --release --locked -p celhook`, installing
  target/release/celhook, on a Rust image no older than `rust-version`.

    scripts/image-context.py [--limit-mb 5] [--dep-info target/debug/deps/celhook-*.d target/debug/deps/celhook_*.d]
"""
import argparse
import fnmatch
import json
import os
import re
import subprocess
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


def needed_by_cargo(root):
    """Manifests, lock file and target sources cargo reads for the workspace."""
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps", "--locked", "--offline"],
        check=True, capture_output=True, text=True).stdout
    meta = json.loads(out)
    paths = {"Cargo.lock", "Cargo.toml"}
    for pkg in meta["packages"]:
        paths.add(os.path.relpath(pkg["manifest_path"], root))
        for target in pkg["targets"]:
            paths.add(os.path.relpath(target["src_path"], root))
    return paths


def compiled_from(dep_info, root):
    """The workspace files a cargo dep-info (.d) file lists."""
    with open(dep_info) as f:
        text = f.read()
    # "<output>: <input> <input> ...", spaces in names escaped as "\ ".
    _, _, inputs = text.partition(": ")
    paths = set()
    for token in re.split(r"(?<!\\)\s+", inputs.strip()):
        path = os.path.realpath(token.replace("\\ ", " "))
        if path.startswith(root + os.sep) and os.path.exists(path):
            paths.add(os.path.relpath(path, root))
    return paths


def dockerfile_problems(rust_version):
    """How the Dockerfile's build differs from the README's set-up."""
    text = open("Dockerfile").read()
    problems = []
    builds = [b.strip() for b in re.findall(r"cargo build[^\n\\&]*", text)]
    if builds != ["cargo build --release --locked -p celhook"]:
        problems.append(f"Dockerfile: expected one `cargo build --release --locked -p celhook`, found {builds}")
    if "target/release/celhook" not in text:
        problems.append("Dockerfile: does not install target/release/celhook")
    image = re.search(r"^FROM rust:(\d+)\.(\d+)", text, re.M)
    want = tuple(int(x) for x in rust_version.split(".")[:2])
    if not image or (int(image.group(1)), int(image.group(2))) < want:
        problems.append(f"Dockerfile: build image older than rust-version {rust_version} (or not rust:<x.y>)")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit-mb", type=float, default=5.0)
    ap.add_argument("--dep-info", nargs="+", default=[], help="cargo's .d files of the celhook crate")
    args = ap.parse_args()
    root = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    dep_infos = [os.path.realpath(d) for d in args.dep_info]
    if args.dep_info and not dep_infos:
        sys.exit("--dep-info: no files")
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
    failed = False
    if total > args.limit_mb * 1e6:
        for size, rel in sorted(files, reverse=True)[:10]:
            print(f"  {size / 1e6:8.2f} MB  {rel}", file=sys.stderr)
        failed = True
    in_context = {rel for _, rel in files}
    needed = needed_by_cargo(root)
    for dep_info in dep_infos:
        needed |= compiled_from(dep_info, root)
    missing = sorted(needed - in_context)
    for rel in missing:
        print(f"  not in the build context (.dockerignore?): {rel}", file=sys.stderr)
    failed |= bool(missing)
    rust_version = re.search(r'^rust-version\s*=\s*"([^"]+)"', open("Cargo.toml").read(), re.M).group(1)
    for problem in dockerfile_problems(rust_version):
        print(problem, file=sys.stderr)
        failed = True
    if failed:
        sys.exit(1)
    print(f"image build: the {len(needed)} files cargo needs are in the context; "
          f"the Dockerfile builds as the README's set-up")


if __name__ == "__main__":
    main()
