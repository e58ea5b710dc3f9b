#!/usr/bin/env bash
# Issue 17's cel-js bar with both sides timed in turns. cel-js runs in node
# and the hot path in a Rust benchmark, so the two cannot share a process
# the way benches/paired.rs pairs its sides; instead each round runs
# celhook's side (`cargo bench --bench paired -- peer-method`, the peer
# harness's own timing method), then cel-js's harness
# (../shared/peer-bench/js-marcbachmann-cel-js/bench.mjs, unchanged), then
# celhook's side again. A round's ratio is the mean of celhook's two runs
# over cel-js's 17-rule admission (its 20-rule admission less its times
# for the 3 rules a CRD cannot carry, as scripts/bench-ratios.sh counts
# it), so a drift of the machine's speed within a round falls on both
# sides. Prints one JSON line shaped like benches/paired.rs's.
#
#   scripts/celjs-in-turns.sh            15 rounds, about two minutes
#
# cel-js's own figure moves by up to 2x from one node process to the next
# (V8's tiering), so a handful of rounds is not enough to say which side of
# a bar it falls on: the quartiles are printed beside the median.
#
# Env: ROUNDS (15), PEER_BENCH (default ../shared/peer-bench), BENCH_WORK
# (writable work dir, default $TMPDIR/celhook-bench; the peer copy with its
# node_modules lives in its peer-bench/), CARGO_TARGET_DIR, and the peer
# harness's PERF_SAMPLE_MS, PERF_SAMPLES and PERF_WARMUP_MS, which both
# sides read.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PEER_BENCH=${PEER_BENCH:-$ROOT/../shared/peer-bench}
[[ -d $PEER_BENCH ]] || PEER_BENCH=/work/shared/peer-bench
WORK=${BENCH_WORK:-${TMPDIR:-/tmp}/celhook-bench}
ROUNDS=${ROUNDS:-15}
PEER=$WORK/peer-bench
OUT=$WORK/celjs-in-turns
mkdir -p "$PEER" "$OUT"
if [[ ! -f $PEER/js-marcbachmann-cel-js/bench.mjs ]]; then
  cp -r "$PEER_BENCH/." "$PEER/"
  chmod -R u+w "$PEER"
fi
if [[ ! -d $PEER/js-marcbachmann-cel-js/node_modules ]]; then
  (cd "$PEER/js-marcbachmann-cel-js" && npm install --no-audit --no-fund --loglevel=error >&2)
fi
(cd "$ROOT" && cargo bench --bench paired --no-run --quiet)
ours() { (cd "$ROOT" && cargo bench --bench paired --quiet -- peer-method); }
rm -f "$OUT"/*.json
for r in $(seq 1 "$ROUNDS"); do
  ours > "$OUT/ours-$r-a.json"
  node "$PEER/js-marcbachmann-cel-js/bench.mjs" > "$OUT/celjs-$r.json"
  ours > "$OUT/ours-$r-b.json"
  echo "round $r/$ROUNDS: $(date -u +%TZ) $(uptime | sed 's/.*load average/load average/')" >&2
done
python3 - "$OUT" "$ROUNDS" <<'EOF'
import json, os, statistics, sys

out, rounds = sys.argv[1], int(sys.argv[2])
NOT_IN_CRD = ["labels-required", "labels-size", "name-matches-label"]

def last_json(path):
    return json.loads(open(path).read().strip().splitlines()[-1])

ours, theirs, ratios = [], [], []
for r in range(1, rounds + 1):
    a = last_json(os.path.join(out, f"ours-{r}-a.json"))["hot_path_create_17_rules_ns"]
    b = last_json(os.path.join(out, f"ours-{r}-b.json"))["hot_path_create_17_rules_ns"]
    js = last_json(os.path.join(out, f"celjs-{r}.json"))
    missing = [k for k in NOT_IN_CRD if k not in js.get("eval_ns", {})]
    if js.get("errors") or missing:
        sys.exit(f"round {r}: cel-js did not run every rule: errors {js.get('errors')}, missing {missing}")
    js17 = js["admission_ns"] - sum(js["eval_ns"][k] for k in NOT_IN_CRD)
    mine = (a + b) / 2
    ours.append(mine)
    theirs.append(js17)
    ratios.append(mine / js17)

q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
print(json.dumps({
    "pair": "hot path CREATE (17 rules) / cel-js per admission (17 rules)",
    "rounds": rounds,
    "batch": "celhook, cel-js, celhook (the peer harness's timing on both sides)",
    "ours_us": statistics.median(ours) / 1e3,
    "floor_us": statistics.median(theirs) / 1e3,
    "ratio": statistics.median(ratios),
    "ratio_quartiles": [q[0], q[2]],
    "ratios": ratios,
}))
EOF
