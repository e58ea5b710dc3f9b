#!/usr/bin/env bash
# Two builds of celhook, timed against each other as servers: both on CPU 0
# (one idle while the other is measured), the load generator on CPU 1, runs
# of each alternating, so that the machine's drift from minute to minute
# falls on both sides alike. Each run prints the throughput over HTTP/1.1
# keep-alive (how the API server calls webhooks) and the server's own user
# and system CPU time per answered review, from /proc and the server's
# request histogram.
#
#   scripts/server-ab.sh OLD_BIN NEW_BIN [CONFIG_DIR] [PAIRS]
#
# CONFIG_DIR defaults to tests/fixtures/perf/core, PAIRS to 6; each run is
# DURATION (5s) long. Build an older commit apart, so that its build does
# not disturb this one's target directory:
#
#   git worktree add /tmp/old <commit>
#   (cd /tmp/old && CARGO_TARGET_DIR=/tmp/old-target cargo build --release -p celhook)
#   cargo build --release -p celhook -p celhook-loadtest
#   scripts/server-ab.sh /tmp/old-target/release/celhook target/release/celhook
#
# Needs taskset and two CPUs. Session 42 found single runs 25k-35k reviews
# a second apart on the same binary: compare medians over several pairs.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OLD=$1
NEW=$2
CONFIG=${3:-$ROOT/tests/fixtures/perf/core}
PAIRS=${4:-6}
DURATION=${DURATION:-5s}
LOADTEST=${CARGO_TARGET_DIR:-$ROOT/target}/release/celhook-loadtest
BODY=$ROOT/tests/fixtures/perf/review-create.json
[[ -x $LOADTEST ]] || { echo "build the load tool: cargo build --release -p celhook-loadtest" >&2; exit 2; }
WORK=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT

# shellcheck source=scripts/celhook-serve.sh
source "$ROOT/scripts/celhook-serve.sh"

# Starts a server on CPU 0, on a port the kernel picks, and records its
# pid and port.
start() {
  local name=$1 bin=$2 port
  taskset -c 0 "$bin" serve --config "$CONFIG" --listen 127.0.0.1:0 --log-format json > "$WORK/$name.log" 2>&1 &
  pids+=($!)
  echo $! > "$WORK/$name.pid"
  port=$(celhook_port "$WORK/$name.log" "${pids[-1]}") \
    || { echo "$name did not start; its log:" >&2; cat "$WORK/$name.log" >&2; exit 1; }
  echo "$port" > "$WORK/$name.port"
}

start old "$OLD"
start new "$NEW"
for i in $(seq 1 "$PAIRS"); do
  for side in old new; do
    pid=$(cat "$WORK/$side.pid")
    port=$(cat "$WORK/$side.port")
    before="$(cut -d' ' -f14,15 "/proc/$pid/stat") $(celhook_answered "$port")"
    taskset -c 1 "$LOADTEST" --insecure --connections 4 --format json -q --http 1.1 \
      --url "https://127.0.0.1:$port/validate?timeout=10s" -c 32 -d "$DURATION" \
      admission --review "$BODY" > "$WORK/$side-$i.json"
    after="$(cut -d' ' -f14,15 "/proc/$pid/stat") $(celhook_answered "$port")"
    # shellcheck disable=SC2086
    python3 - "$side" "$WORK/$side-$i.json" $before $after <<'PY'
import json, os, sys
side, report = sys.argv[1], sys.argv[2]
u0, s0, r0, u1, s1, r1 = map(int, sys.argv[3:9])
rps = json.load(open(report))["throughput_rps"]
hz, n = os.sysconf("SC_CLK_TCK"), max(r1 - r0, 1)
print(f"{side}  {rps:8.0f} reviews/s  user {1e6 * (u1 - u0) / hz / n:5.1f} us  "
      f"system {1e6 * (s1 - s0) / hz / n:5.1f} us a review")
PY
  done
done
