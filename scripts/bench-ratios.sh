#!/usr/bin/env bash
# Runs the peer CEL engines (a writable copy of ../shared/peer-bench), celhook's
# criterion benchmark (then issue 17's ratios timed in turns, benches/paired.rs
# and scripts/celjs-in-turns.sh,
# and the conversion's peak-memory count, examples/convert_peak_memory.rs) and
# the server load tests back to back (throughput, then the tail at half the
# maximum and at an eighth, then what an idle CPU costs a review in process
# and a 256 KiB chase with no celhook code, examples/idle_cost.rs), then prints the five targets of issue 6 with
# measured values and ratios. The machine is shared and noisy: only the
# ratios within one run mean anything, and the load average is printed
# next to each phase.
#
#   scripts/bench-ratios.sh                 everything (about 15 minutes)
#   SKIP_PEERS=1 scripts/bench-ratios.sh    reuse the last peer results
#   SKIP_BENCH=1 / SKIP_SERVER=1            reuse the last criterion / server results
#
# Env: PEER_BENCH (source of the peer harness, default ../shared/peer-bench),
# BENCH_WORK (writable work dir, default $TMPDIR/celhook-bench), ENGINES (peer
# engines, default "json-floor js-marcbachmann-cel-js"), REPS (peer repetitions, 3),
# DURATION (each server run, 5s), PAIRS (rules/no-rules alternations per HTTP
# version, 3), TAIL_DURATION (10s), CONNECTIONS (4), CONCURRENCY (32),
# TAIL_IN_FLIGHT (the open loop's cap on requests in flight, 64), TAIL_RUNS (runs
# at half the maximum, 3; the median is the bar's), TAIL_SHARED (set:
# no pinning in the tail runs), GEN_THREADS (the load generator's worker threads
# in the throughput runs, default one per CPU: a diagnosis of what the generator
# adds, not the bars' setting), CARGO_TARGET_DIR.
#
# The servers listen on ports the kernel picks (port 0, read back from their
# logs), so another server on a fixed port cannot break the run. Throughput
# is measured over HTTP/1.1 keep-alive, the load generator's default and how
# the API server calls webhooks (a pool of connections, one request at a time
# on each), and over HTTP/2; the tail runs use HTTP/1.1. Each throughput run
# also records the server's and the generator's CPU per answered review, so
# that the report can say how much of a pair's ratio is the machine's.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PEER_BENCH=${PEER_BENCH:-$ROOT/../shared/peer-bench}
[[ -d $PEER_BENCH ]] || PEER_BENCH=/work/shared/peer-bench
WORK=${BENCH_WORK:-${TMPDIR:-/tmp}/celhook-bench}
ENGINES=${ENGINES:-"json-floor js-marcbachmann-cel-js"}
REPS=${REPS:-3}
DURATION=${DURATION:-5s}
PAIRS=${PAIRS:-3}
TAIL_DURATION=${TAIL_DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-4}
CONCURRENCY=${CONCURRENCY:-32}
TAIL_IN_FLIGHT=${TAIL_IN_FLIGHT:-64}
TAIL_RUNS=${TAIL_RUNS:-3}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
export CARGO_TARGET_DIR=$TARGET
mkdir -p "$WORK/server"
LOG=$WORK/load.txt
load() { echo "$1: $(date -u +%FT%TZ) $(uptime | sed 's/.*load average/load average/')" | tee -a "$LOG" >&2; }
# A report rendered again from the last results (every phase skipped) keeps
# their load record.
if [[ -z ${SKIP_PEERS:-} || -z ${SKIP_BENCH:-} || -z ${SKIP_SERVER:-} ]]; then : > "$LOG"; fi

# --- 1. peers -----------------------------------------------------------------
if [[ -z ${SKIP_PEERS:-} ]]; then
  # A writable copy; node_modules, .venv and Rust builds survive between runs.
  mkdir -p "$WORK/peer-bench"
  cp -r "$PEER_BENCH/." "$WORK/peer-bench/"
  chmod -R u+w "$WORK/peer-bench"
  load "peers start"
  # Without this script's CARGO_TARGET_DIR: the harness runs its Rust
  # peers (the JSON floor among them) from their own target directories.
  (cd "$WORK/peer-bench" && env -u CARGO_TARGET_DIR REPS="$REPS" ENGINES="$ENGINES" ./run-all.sh > "$WORK/peer-table.md")
  load "peers end"
fi

# --- 2. celhook's criterion benchmark ----------------------------------------
if [[ -z ${SKIP_BENCH:-} ]]; then
  (cd "$ROOT" && cargo bench --bench hot_path --no-run --quiet)
  load "bench start"
  (cd "$ROOT" && cargo bench --bench hot_path -- --noplot > "$WORK/criterion.txt" 2>&1)
  load "bench end"
  # Issue 17's ratios with both sides timed in turns (benches/paired.rs):
  # the machine's drift between criterion's groups falls on both alike.
  (cd "$ROOT" && cargo bench --bench paired --quiet > "$WORK/paired.jsonl")
  load "paired end"
  # The cel-js bar in turns: celhook, cel-js's harness, celhook, per round.
  if BENCH_WORK=$WORK PEER_BENCH=$PEER_BENCH "$ROOT/scripts/celjs-in-turns.sh" >> "$WORK/paired.jsonl"; then
    load "cel-js in turns end"
  else
    load "cel-js in turns FAILED"
  fi
  # Target 4's peak memory: counted bytes (dhat), not a timing.
  (cd "$ROOT" && cargo run --release --quiet --example convert_peak_memory > "$WORK/convert-memory.json")
  load "conversion memory end"
fi

# --- 3. the server over HTTPS: HTTP/1.1 keep-alive and HTTP/2 ---------------
if [[ -z ${SKIP_SERVER:-} ]]; then
  (cd "$ROOT" && cargo build --release --quiet -p celhook -p celhook-loadtest)
  BIN=$TARGET/release
  # shellcheck source=scripts/celhook-serve.sh
  source "$ROOT/scripts/celhook-serve.sh"
  FIX=$ROOT/tests/fixtures/perf
  pids=()
  cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
  trap cleanup EXIT
  # Starts celhook on a port the kernel picks and prints that port, read
  # from the server's "listening" log line.
  serve() {
    local name=$1 config=$2 log=$WORK/server/$1.log port
    ${SERVE_PREFIX:-} "$BIN/celhook" serve --config "$config" --listen 127.0.0.1:0 --log-format json > "$log" 2>&1 &
    pids+=($!)
    if ! port=$(celhook_port "$log" "${pids[-1]}"); then
      echo "celhook ($name) did not start listening; its log:" >&2
      cat "$log" >&2
      return 1
    fi
    echo "$port"
  }
  # Not in $(...): the server's pid must reach this shell's pids.
  serve core "$FIX/core" > "$WORK/server/core.port"
  serve norules "$FIX/norules" > "$WORK/server/norules.port"
  RULES_PORT=$(cat "$WORK/server/core.port")
  NORULES_PORT=$(cat "$WORK/server/norules.port")
  echo "servers: 17 rules on 127.0.0.1:$RULES_PORT, no rules on 127.0.0.1:$NORULES_PORT" >&2
  # A shared run that also records where the CPU went: the server's (all
  # its threads, from /proc) and the generator's (rusage), over the run and
  # its warm-up, with the reviews the server answered meanwhile (its
  # request histogram). Sharing two cores, the generator's CPU per request
  # is part of what each side's throughput pays, and it moves from run to
  # run. A failed reading leaves the run's figures out, not the run.
  measured() {
    python3 - "$1" "$2" "$3" "$BIN/celhook-loadtest" --insecure --connections "$CONNECTIONS" ${GEN_THREADS:+--threads "$GEN_THREADS"} --format json -q "${@:4}" <<'PY'
import json, os, resource, ssl, subprocess, sys, urllib.request
out, pid, port, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def ticks():
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
def answered():
    ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
    text = urllib.request.urlopen(f"https://127.0.0.1:{port}/metrics", context=ctx, timeout=30).read().decode()
    return sum(float(l.split()[-1]) for l in text.splitlines()
               if l.startswith("celhook_request_duration_seconds_count") and 'handler="validate"' in l)
def reading(scrape_first):
    """(server CPU seconds, answered reviews), or None when either fails;
    before the run the scrape comes first, so that its handshake falls
    outside the run's CPU."""
    try:
        if scrape_first:
            n = answered()
            return ticks(), n
        return ticks(), answered()
    except (OSError, ValueError) as e:
        print(f"no CPU reading for {out}: {e}", file=sys.stderr)
        return None
before = reading(True)
report = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
u = resource.getrusage(resource.RUSAGE_CHILDREN)
after = reading(False)
r = json.loads(report)
if before and after:
    r["cpu"] = {"server_s": after[0] - before[0], "generator_s": u.ru_utime + u.ru_stime,
                "answered": after[1] - before[1]}
json.dump(r, open(out, "w"))
PY
  }
  body=$FIX/review-create.json
  rm -f "$WORK"/server/*.json "$WORK"/server/*.cpu
  # Alternating runs, both servers and both HTTP versions within each pair,
  # so that a drift of the machine's load falls on all four alike.
  load "server throughput start"
  for i in $(seq 1 "$PAIRS"); do
    for http in 1.1 2; do
      tag=h${http%%.*}
      measured "$WORK/server/rules-$tag-$i.json" "${pids[0]}" "$RULES_PORT" --http "$http" \
        --url "https://127.0.0.1:$RULES_PORT/validate?timeout=10s" -c "$CONCURRENCY" -d "$DURATION" \
        admission --review "$body"
      measured "$WORK/server/norules-$tag-$i.json" "${pids[1]}" "$NORULES_PORT" --http "$http" \
        --url "https://127.0.0.1:$NORULES_PORT/validate?timeout=10s" -c "$CONCURRENCY" -d "$DURATION" \
        admission --review "$body"
    done
  done
  load "server throughput end"
  # The tail runs are over HTTP/1.1, at fractions of its closed-loop maximum.
  # With two cores or more, the server is pinned to CPU 0 (all its threads)
  # and the generator to the others, as issue 17 asks: sharing cores, a
  # request's wait for a CPU behind the generator's threads is the tail.
  # The maximum is then the pinned server's, measured here. The pinned
  # server is a new one started on CPU 0, so that its defaults (one worker
  # per CPU it may use) see one CPU, as a pod's do under a 1-CPU limit;
  # pinning the running server would leave two workers taking turns on one
  # CPU, each request's wait behind the other's timeslice in its time.
  GEN=()
  TAIL_PID=${pids[0]}
  if [[ -z ${TAIL_SHARED:-} ]] && (( $(nproc) >= 2 )) && command -v taskset > /dev/null; then
    SERVE_PREFIX="taskset -c 0" serve core-pinned "$FIX/core" > "$WORK/server/core-pinned.port"
    TAIL_PID=${pids[-1]}
    declare -A pinned_pid
    pinned_pid[max]=$TAIL_PID
    # The same CRD without rules, also alone on CPU 0 (idle while the other
    # is measured): the ratio of the two is the server's own, without the
    # generator's threads competing for its CPU, as on a cluster where
    # the API server runs on other machines.
    SERVE_PREFIX="taskset -c 0" serve norules-pinned "$FIX/norules" > "$WORK/server/norules-pinned.port"
    pinned_pid[norules]=${pids[-1]}
    RULES_PORT=$(cat "$WORK/server/core-pinned.port")
    PINNED_NORULES_PORT=$(cat "$WORK/server/norules-pinned.port")
    GEN=(taskset -c "1-$(( $(nproc) - 1 ))")
    echo "tail: server pinned to CPU 0, generator to CPUs 1-$(( $(nproc) - 1 ))" >&2
    load "pinned throughput start"
    for i in $(seq 1 "$PAIRS"); do
      for side in max:$RULES_PORT norules:$PINNED_NORULES_PORT; do
        # The server's own CPU time over the run (all its threads, user
        # and system, from /proc), divided by the reviews it answered:
        # what a review costs the server, which the throughput hides when
        # the one generator core cannot keep the faster server busy.
        # The load tool's report leaves out its warm-up's reviews, the
        # server's count does not; a failed scrape prints "x", and the
        # table leaves that run out rather than the whole script stopping.
        before="$(cut -d' ' -f14,15 "/proc/${pinned_pid[${side%%:*}]}/stat") $(celhook_answered "${side#*:}" || echo x)"
        "${GEN[@]}" "$BIN/celhook-loadtest" --insecure --connections "$CONNECTIONS" ${GEN_THREADS:+--threads "$GEN_THREADS"} --format json -q --http 1.1 \
          --url "https://127.0.0.1:${side#*:}/validate?timeout=10s" -c "$CONCURRENCY" -d "$DURATION" \
          admission --review "$body" > "$WORK/server/pinned-${side%%:*}-$i.json"
        after="$(cut -d' ' -f14,15 "/proc/${pinned_pid[${side%%:*}]}/stat") $(celhook_answered "${side#*:}" || echo x)"
        echo "$before $after $(getconf CLK_TCK)" > "$WORK/server/pinned-${side%%:*}-$i.cpu"
      done
    done
    load "pinned throughput end"
    max=$(python3 -c "import json,statistics,sys; print(statistics.median(json.load(open(f))['throughput_rps'] for f in sys.argv[1:]))" "$WORK"/server/pinned-max-*.json)
  else
    max=$(python3 -c "import json,statistics,sys; print(statistics.median(json.load(open(f))['throughput_rps'] for f in sys.argv[1:]))" "$WORK"/server/rules-h1-*.json)
  fi
  half=$(python3 -c "print(round($max/2, 1))")
  eighth=$(python3 -c "print(round($max/8, 1))")
  # Each tail run also records where the CPU went (server and generator,
  # from /proc and rusage), the CPU pressure (/proc/pressure/cpu) and the
  # server's own request histogram over the run: on a machine the
  # generator shares, they tell a slow server from a busy machine. Over
  # HTTP/1.1 each request in flight holds a connection: TAIL_IN_FLIGHT caps
  # both (celhook refuses more than 64 handshakes at once from one address;
  # requests due beyond the cap wait, and the wait counts as latency).
  tail_run() {
    python3 - "$1" "$2" "$TAIL_PID" "$WORK/server" "$RULES_PORT" "${GEN[@]}" "$BIN/celhook-loadtest" --insecure --connections "$CONNECTIONS" \
      --format json -q --url "https://127.0.0.1:$RULES_PORT/validate?timeout=10s" --rate "$2" -c "$TAIL_IN_FLIGHT" \
      -d "$TAIL_DURATION" admission --review "$body" <<'PY'
import json, os, resource, ssl, subprocess, sys, time, urllib.request
name, rate, server, out, port, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:]
def ticks(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
def histogram():
    ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
    text = urllib.request.urlopen(f"https://127.0.0.1:{port}/metrics", context=ctx, timeout=30).read().decode()
    return {l.split('le="')[1].split('"')[0]: float(l.split()[-1]) for l in text.splitlines()
            if l.startswith("celhook_request_duration_seconds_bucket") and 'handler="validate"' in l}
h0, s0, p0 = histogram(), ticks(server), None
try:
    p0 = int(open("/proc/pressure/cpu").readline().split("total=")[1])
except (OSError, IndexError, ValueError):
    pass
t0 = time.monotonic()
report = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
wall = time.monotonic() - t0
u = resource.getrusage(resource.RUSAGE_CHILDREN)
s1, h1 = ticks(server), histogram()
r = json.loads(report)
r["pinned"] = cmd[0] == "taskset"
r["cpu"] = {"wall_s": wall, "server_s": s1 - s0, "generator_s": u.ru_utime + u.ru_stime}
try:
    p1 = int(open("/proc/pressure/cpu").readline().split("total=")[1])
    r["cpu"]["pressure_some"] = (p1 - p0) / 1e6 / wall
except (OSError, IndexError, ValueError, TypeError):
    pass
r["server_histogram"] = {le: h1[le] - h0.get(le, 0) for le in h1}
json.dump(r, open(os.path.join(out, name + ".json"), "w"))
PY
  }
  # Several runs at half the maximum: one 10 s run reads anywhere from 2 to
  # 6 on a VM whose speed moves within minutes, and the bar is read on the
  # median, as the throughput bars are.
  for i in $(seq 1 "$TAIL_RUNS"); do
    load "tail $i start (open loop at $half/s)"
    tail_run "tail-$i" "$half"
  done
  load "tail end; at 1/8 of the max ($eighth/s)"
  tail_run tail-eighth "$eighth"
  load "tail at 1/8 end"
  cleanup
  trap - EXIT
  # What an idle CPU costs the next review on this machine, in process (no
  # network, TLS or generator): the hot path one review at a time with a
  # pause of 50 us after each (about the gap at 20k reviews a second;
  # asleep, the timer's slack comes on top), the thread asleep or
  # spinning, on CPU 0 where the pinned server ran. With the guest's idle
  # settings beside it, and the same for a 256 KiB chase with no celhook
  # code, it tells a server's tail from the machine's. A failure here
  # costs its lines of the report, not the report.
  PIN=()
  if [[ -z ${TAIL_SHARED:-} ]] && (( $(nproc) >= 2 )) && command -v taskset > /dev/null; then PIN=(taskset -c 0); fi
  if (cd "$ROOT" && cargo build --release --quiet --example idle_cost) &&
    python3 - "$WORK/server/idle.json" "${PIN[@]}" "$TARGET/release/examples/idle_cost" <<'PY'
import json, subprocess, sys
out, cmd = sys.argv[1], sys.argv[2:]
def read(path):
    try:
        return open(path).read().strip()
    except OSError:
        return None
# The polling before a halt is the haltpoll governor's: its parameter
# exists whenever the governor is built, in use or not.
r = {"cpuidle_driver": read("/sys/devices/system/cpu/cpuidle/current_driver"),
     "cpuidle_governor": read("/sys/devices/system/cpu/cpuidle/current_governor_ro")
                         or read("/sys/devices/system/cpu/cpuidle/current_governor"),
     "guest_halt_poll_ns": read("/sys/module/haltpoll/parameters/guest_halt_poll_ns"),
     "runs": []}
# `walk` is no celhook code, a 256 KiB chase about as long as a review:
# the machine's own share of what the pause costs.
for probe in ("core", "walk"):
    for between in ("sleep", "spin", "sleep", "spin"):
        done = subprocess.run(cmd + [probe, "50", between], capture_output=True, text=True)
        try:
            if done.returncode != 0:
                raise ValueError(done.stderr.strip())
            r["runs"].append(json.loads(done.stdout))
        except ValueError as e:
            print(f"idle_cost {probe} {between}: {e}", file=sys.stderr)
json.dump(r, open(out, "w"))
PY
  then
    load "idle cost end"
  else
    load "idle cost FAILED"
  fi
fi

# --- 4. the table -------------------------------------------------------------
python3 - "$WORK" "$TARGET" <<'EOF'
import glob, json, os, statistics, sys
work, target = sys.argv[1], sys.argv[2]

def est(group, bench):
    p = os.path.join(target, "criterion", group, bench, "new", "estimates.json")
    try:
        return json.load(open(p))["median"]["point_estimate"]
    except (OSError, KeyError, ValueError):
        return None

def us(ns):
    return "n/a" if ns is None else f"{ns/1000:.2f} us"

def ratio(a, b):
    return "n/a" if a is None or b is None or not b else f"{a/b:.2f}x"

peers = {}
for f in glob.glob(os.path.join(work, "peer-bench", "results", "run-*", "*.json")):
    try:
        peers.setdefault(os.path.basename(f)[:-5], []).append(json.loads(open(f).read().strip().splitlines()[-1]))
    except (ValueError, IndexError, OSError):
        pass

def peer_median(engine, f):
    vals = [f(r) for r in peers.get(engine, []) if f(r) is not None]
    return statistics.median(vals) if vals else None

NOT_IN_CRD = ["labels-required", "labels-size", "name-matches-label"]
cel_js = "js-marcbachmann-cel-js"
js_20 = peer_median(cel_js, lambda r: r.get("admission_ns"))
js_17 = peer_median(cel_js, lambda r: r["admission_ns"] - sum(r["eval_ns"].get(k, 0) for k in NOT_IN_CRD)
                    if r.get("admission_ns") and r.get("eval_ns") else None)
floor_obj = peer_median("json-floor", lambda r: r.get("serde_json_value_ns"))
ours = est("target1", "hot_path_create_17_rules")
ours_update = est("target1", "hot_path_update_19_rules")
norules = est("target1", "hot_path_create_no_rules")
parse_body = est("target1", "serde_json_parse_body")
parse_obj = est("target1", "serde_json_parse_object")

print("# celhook vs. issue 6 targets\n")
print("machine load during the phases:")
print("```\n" + open(os.path.join(work, "load.txt")).read().strip() + "\n```\n")
print("## 1. Hot path (criterion median; peers: median of their repetitions)\n")
print(f"- celhook hot path, CREATE, 17 rules (decode + lookup + eval + encode): {us(ours)}")
print(f"- @marcbachmann/cel-js per admission, 20 rules: {us(js_20)}; without the 3 rules a CRD cannot carry: {us(js_17)}")
print(f"- serde_json parse of the same review body: {us(parse_body)} (object alone: {us(parse_obj)}; peer floor binary: {us(floor_obj)})")
print(f"- **ratio vs cel-js (17 rules): {ratio(ours, js_17)}** (issue 6: <= 0.5x; issue 17: <= 0.10x; vs its 20-rule figure {ratio(ours, js_20)})")
print(f"- **ratio vs serde_json parse of the body: {ratio(ours, parse_body)}** (issue 6: <= 5x; issue 17: <= 0.7x)")
print(f"- same CRD without rules: {us(norules)} ({ratio(norules, parse_body)} of the parse)")
parse_update = est("target1", "serde_json_parse_update_body")
print(f"- UPDATE, 19 rules (2 transition rules): {us(ours_update)} vs serde_json parse of its body {us(parse_update)}: "
      f"**{ratio(ours_update, parse_update)}** (issue 17: <= 0.7x)")

print("\n### Issue 17's ratios timed in turns (benches/paired.rs: batches of both sides alternate; median of the rounds' ratios)\n")
try:
    paired = [json.loads(l) for l in open(os.path.join(work, "paired.jsonl")) if l.startswith("{")]
except (OSError, ValueError):
    paired = []
for p in paired:
    low, high = p["ratio_quartiles"]
    t = (lambda x: f"{x/1000:.1f} ms") if p["floor_us"] > 10_000 else (lambda x: f"{x:.2f} us")
    print(f"- {p['pair']}: {t(p['ours_us'])} vs {t(p['floor_us'])}: **{p['ratio']:.3f}x** "
          f"(quartiles {low:.3f}-{high:.3f}, {p['rounds']} rounds of {p['batch']})")
if not paired:
    print("- n/a (no paired.jsonl)")
print("\n### Per rule (ns; celhook: Validator::validate with that rule only, object parsed; cel-js: eval with bound context)\n")
print("| rule | celhook | cel-js | ratio |\n|---|---|---|---|")
rule_dir = os.path.join(target, "criterion", "rule")
ids = sorted(os.listdir(rule_dir)) if os.path.isdir(rule_dir) else []
for rid in ids:
    mine = est("rule", rid)
    theirs = peer_median(cel_js, lambda r: (r.get("eval_ns", {}).get(rid) or r.get("transition_ns", {}).get(rid)
                                            or r.get("kube_eval_ns", {}).get(rid)))
    print(f"| {rid} | {mine:.0f} | {'n/a' if theirs is None else f'{theirs:.0f}'} | {ratio(mine, theirs)} |")

def runs(pattern):
    out = []
    for f in sorted(glob.glob(os.path.join(work, "server", pattern))):
        try:
            out.append(json.load(open(f)))
        except (OSError, ValueError):
            pass
    return out

print("\n## 2. Server over HTTPS, keep-alive (closed loop, alternating runs)\n")
if os.environ.get("GEN_THREADS"):
    print(f"- the load generator ran with {os.environ['GEN_THREADS']} worker thread(s) (GEN_THREADS): a diagnosis, not the bars' setting\n")
for tag, label in (("h1", "HTTP/1.1, as the API server calls webhooks (a pool of connections, one request at a time on each)"),
                   ("h2", "HTTP/2 (requests multiplexed on the connections)")):
    print(f"### {label}\n")
    rules, norule = runs(f"rules-{tag}-*.json"), runs(f"norules-{tag}-*.json")
    if not (rules and norule):
        print("- no server results\n")
        continue
    for a, b in zip(rules, norule):
        print(f"- pair: 17 rules {a['throughput_rps']:.0f}/s (p50 {a['latency']['p50_ms']:.3f} ms, failed {a['failed']}), "
              f"no rules {b['throughput_rps']:.0f}/s (p50 {b['latency']['p50_ms']:.3f} ms, failed {b['failed']}); "
              f"ratio {a['throughput_rps']/b['throughput_rps']:.2f}")
    r = [a["throughput_rps"] / b["throughput_rps"] for a, b in zip(rules, norule)]

    def us_each(run, side):
        c = run.get("cpu", {})
        return c[side] * 1e6 / c["answered"] if c.get("answered") else None

    split = [(us_each(a, "server_s"), us_each(a, "generator_s"), us_each(b, "server_s"), us_each(b, "generator_s"))
             for a, b in zip(rules, norule)]
    split = [x for x in split if None not in x]
    if split:
        pairs = "; ".join(f"{r_s:.1f} + {r_g:.1f} against {n_s:.1f} + {n_g:.1f} us, {(n_s + n_g) / (r_s + r_g):.2f}"
                          for r_s, r_g, n_s, n_g in split)
        cpu = statistics.median((n_s + n_g) / (r_s + r_g) for r_s, r_g, n_s, n_g in split)
        print(f"- where the CPU went, pair by pair (per answered review, warm-up included; the server + the generator "
              f"with the rules, against the same without; their CPU ratio): {pairs}. Two shared cores, if "
              f"nothing else runs, give a run about 2 s / (server + generator) reviews a second, so the CPU ratio is "
              f"roughly the throughput ratio the machine allows: **median {cpu:.2f}**")
    versions = sorted({x.get("http_version", "?") for x in rules + norule})
    print(f"- **throughput ratio rules / no rules: median {statistics.median(r):.2f}** (min {min(r):.2f}; issue 6: >= 0.7 over HTTP/2; issue 17: >= 0.80 over HTTP/1.1); "
          f"negotiated: {', '.join(versions)} (HTTP/2 answers {sum(x['http2_answers'] for x in rules + norule)}, "
          f"HTTP/1.1 answers {sum(x['http1_answers'] for x in rules + norule)} of {sum(x['requests'] for x in rules + norule)})\n")

print("### HTTP/1.1, the server alone on CPU 0 and the generator on the others (taskset)\n")
rules, norule = runs("pinned-max-*.json"), runs("pinned-norules-*.json")
if rules and norule:
    for a, b in zip(rules, norule):
        print(f"- pair: 17 rules {a['throughput_rps']:.0f}/s (failed {a['failed']}), no rules {b['throughput_rps']:.0f}/s "
              f"(failed {b['failed']}); ratio {a['throughput_rps']/b['throughput_rps']:.2f}")
    r = [a["throughput_rps"] / b["throughput_rps"] for a, b in zip(rules, norule)]
    print(f"- **throughput ratio rules / no rules, server on its own CPU: median {statistics.median(r):.2f}** (min {min(r):.2f})")

    def cpu_per_review(side):
        """The pinned server's user and system CPU per answered review, in
        us, run by run (from the .cpu files written beside each run)."""
        out = []
        for f in sorted(glob.glob(os.path.join(work, "server", f"pinned-{side}-*.cpu"))):
            try:
                # user, system ticks and answered reviews, before and after.
                u0, s0, n0, u1, s1, n1, tck = (int(x) for x in open(f).read().split())
            except (OSError, ValueError):
                continue
            if n1 > n0:
                out.append(((u1 - u0) / tck * 1e6 / (n1 - n0), (s1 - s0) / tck * 1e6 / (n1 - n0)))
        return out

    mine, none = cpu_per_review("max"), cpu_per_review("norules")
    if mine and none:
        med = statistics.median
        mu, ms = med([u for u, _ in mine]), med([s for _, s in mine])
        nu, ns = med([u for u, _ in none]), med([s for _, s in none])
        print(f"- the server's CPU a review (all its threads; the median of the runs' user time + that of their system time): "
              f"17 rules {mu:.1f} + {ms:.1f} us, no rules {nu:.1f} + {ns:.1f} us; "
              f"**CPU ratio no rules / rules {(nu + ns) / (mu + ms):.2f}**: the throughput ratio of a "
              f"server that is the bottleneck. For 0.80 the rules may add {(nu + ns) / 0.8 - (nu + ns):.1f} us "
              f"a review; they add {(mu + ms) - (nu + ns):.1f} us ({mu - nu:.1f} us of user time)")
    print()
else:
    print("- not measured (one CPU, no taskset, or TAIL_SHARED)\n")

def quantile_s(hist, q):
    """The q-quantile of the server's histogram in seconds, interpolated
    linearly within its bucket as Prometheus' histogram_quantile does."""
    bounds = sorted(((float(le), n) for le, n in hist.items() if le != "+Inf"), key=lambda x: x[0])
    total = hist.get("+Inf", 0)
    lower, below = 0.0, 0.0
    for le, n in bounds:
        if total and n >= q * total:
            return lower + (le - lower) * ((q * total - below) / (n - below) if n > below else 1)
        lower, below = le, n
    return None

def quantile(hist, q):
    v = quantile_s(hist, q)
    return "n/a" if v is None else f"{v * 1000:.3f} ms"

print("\n## 3. Tail at 50% of max throughput (HTTP/1.1), open loop\n")
def server_spread(t):
    """The server's own p50 and p99 over a run, in seconds (None when its
    histogram is missing or empty)."""
    h = t.get("server_histogram")
    if not (h and h.get("+Inf")):
        return None
    p50, p99 = quantile_s(h, 0.5), quantile_s(h, 0.99)
    return (p50, p99) if p50 and p99 else None

def tail_lines(t, label):
    l = t["latency"]
    print(f"- {label}: rate {t['target_rate']:.0f}/s, achieved {t['throughput_rps']:.0f}/s, failed {t['failed']}: "
          f"p50 {l['p50_ms']:.3f} ms, p90 {l['p90_ms']:.3f}, p99 {l['p99_ms']:.3f}, p99.9 {l['p999_ms']:.3f}, max {l['max_ms']:.3f}; "
          f"p99 / p50 = {l['p99_ms']/l['p50_ms']:.2f} seen from the generator")
    c = t.get("cpu")
    if c:
        busy = (c["server_s"] + c["generator_s"]) / c["wall_s"]
        pressure = c.get("pressure_some")
        print(f"  - CPU over the run: server {c['server_s'] / c['wall_s']:.2f}, generator {c['generator_s'] / c['wall_s']:.2f} "
              f"of a core ({busy / (os.cpu_count() or 1):.0%} of the machine)"
              + ("" if pressure is None else f"; some task waiting for a CPU {pressure:.0%} of the time"))
    h, spread = t.get("server_histogram"), server_spread(t)
    if spread:
        p50, p99 = spread
        print(f"  - the server's own request durations over the run (interpolated in its buckets): p50 {quantile(h, 0.5)}, "
              f"p99 {quantile(h, 0.99)}, p99.9 {quantile(h, 0.999)} ({h['+Inf']:.0f} reviews); "
              f"p99 / p50 = {p99 / p50:.2f}")

def numbered(prefix):
    """The runs `<prefix><n>.json` that read, by n, with n."""
    found = []
    for f in glob.glob(os.path.join(work, "server", prefix + "[0-9]*.json")):
        n = os.path.basename(f)[len(prefix):-len(".json")]
        try:
            found.append((int(n), json.load(open(f))))
        except (OSError, ValueError):
            pass
    return sorted(found, key=lambda x: x[0])

halves, eighth = numbered("tail-"), runs("tail-eighth.json")
if halves:
    maxes = runs("pinned-max-*.json")
    print("- placement: " + (f"server pinned to CPU 0, generator to the other CPUs; the pinned server's closed-loop maximum "
                             f"{statistics.median(m['throughput_rps'] for m in maxes):.0f}/s (median of {len(maxes)})"
                             if halves[0][1].get("pinned") else "server and generator share every CPU (TAIL_SHARED, or one CPU, or no taskset)"))
    for i, t in halves:
        tail_lines(t, f"at 50% of the max, run {i}")
    ratios = [p99 / p50 for p50, p99 in filter(None, (server_spread(t) for _, t in halves))]
    if ratios:
        print(f"- **the server's own p99 / p50 at 50% of the max: median {statistics.median(ratios):.2f}** of {len(ratios)} runs "
              f"({', '.join(f'{r:.2f}' for r in ratios)}; target <= 3)")
else:
    print("- at 50% of the max: no results")
if eighth:
    tail_lines(eighth[0], "at 1/8 of the max, for comparison")
# An open-loop generator that cannot keep its rate queues the requests due
# and sends them as it can: the server then takes bursts, not the steady
# half load the bar asks about, and its histogram holds them.
if halves and eighth:
    steady = eighth[0]["latency"]["p50_ms"]
    behind = [i for i, t in halves if t["latency"]["p50_ms"] > 5 and t["latency"]["p50_ms"] > 10 * steady]
    if behind:
        print(f"- **the generator fell behind at 50% of the max** in run{'s' if len(behind) > 1 else ''} "
              f"{', '.join(map(str, behind))}: its p50 above 5 ms and ten times its {steady:.3f} ms at 1/8, its own queue; "
              "the server took the requests in bursts, so the tail there is not a steady half load's")

try:
    idle = json.load(open(os.path.join(work, "server", "idle.json")))
except (OSError, ValueError):
    idle = None
if idle:
    governor, poll = idle.get("cpuidle_governor"), idle.get("guest_halt_poll_ns")
    line = f"- the machine's idle: cpuidle driver {idle.get('cpuidle_driver') or 'unknown'}, governor {governor or 'unknown'}"
    if governor == "haltpoll" and poll is not None and poll.isdigit():
        line += f", the guest's halt polling {int(poll) / 1000:.0f} us"
        if poll == "0":
            line += " (off: every idle moment hands the core to the host)"
    print(line)
    # `probe`, not `work`: that name holds the results directory.
    for probe, unit in (("core", "review"), ("walk", "256 KiB chase (no celhook code)")):
        for between, what in (("sleep", "asleep"), ("spin", "spinning")):
            # Records from before the chase have no `dir` other than core.
            rs = [x for x in idle.get("runs", []) if x["between"] == between and x.get("dir", "core") == probe]
            if rs:
                p50 = statistics.median(x["p50_us"] for x in rs)
                p99 = statistics.median(x["p99_us"] for x in rs)
                print(f"  - in process, a pause of {rs[0]['pause_us']} us after each {unit}, the thread {what} in it "
                      f"(`examples/idle_cost.rs {probe}`, median of {len(rs)}): p50 {p50:.1f} us, p99 {p99:.1f} us, p99 / p50 {p99 / p50:.2f}")

print("\n## 4. Conversion (10,000 objects of 4 KiB, criterion median; memory counted by dhat)\n")
try:
    memory = json.load(open(os.path.join(work, "convert-memory.json")))
except (OSError, ValueError):
    memory = {}
def ms(ns):
    return "n/a" if ns is None else f"{ns/1e6:.0f} ms"
for name, suffix, what in [("pizza", "", "Pizzas, toppings list through two CEL expressions (3/4 v1alpha1, 1/4 already v1beta1)"),
                           ("crontab", "_crontab", "CronTabs, hostPort split (one string expression each way)")]:
    conv, floor = est("conversion", f"convert{suffix}_10000"), est("conversion", f"serde_json_roundtrip{suffix}_10000")
    m = memory.get(name, {})
    body, c, r = m.get("body_bytes"), m.get("convert", {}), m.get("serde_json_roundtrip", {})
    print(f"- {what}, body {'n/a' if body is None else f'{body/2**20:.1f} MiB'}:")
    print(f"  - /convert path {ms(conv)} vs serde_json parse + serialize {ms(floor)}: **{ratio(conv, floor)}** (target <= 2x)")
    if c:
        print(f"  - peak heap {c['peak_bytes']/2**20:.1f} MiB with the body: **{c['ratio']:.2f}x the body** (target <= 3x; "
              f"{c['allocations']} allocations); the serde_json round trip peaks at {r['ratio']:.2f}x")
    else:
        print("  - peak memory: n/a (no convert-memory.json)")

print("\n## 5. Scaling (criterion medians)\n")
print("| object size | hot path | serde_json parse | hot path / parse |\n|---|---|---|---|")
for kib in [1, 4, 16, 64]:
    h, p = est("size", f"hot_path/{kib}"), est("size", f"serde_json_parse/{kib}")
    print(f"| {kib} KiB | {us(h)} | {us(p)} | {ratio(h, p)} |")
print("\n| ports (list length) | hot path | per port |\n|---|---|---|")
for n in [4, 16, 64]:
    h = est("list", f"hot_path_ports/{n}")
    print(f"| {n} | {us(h)} | {'n/a' if h is None else f'{h/n/1000:.2f} us'} |")
print("\n| CRDs loaded | lookup | hot path |\n|---|---|---|")
for n in [1, 100, 1000]:
    lookup = est("catalog", f"lookup/{n}")
    print(f"| {n} | {'n/a' if lookup is None else f'{lookup:.1f} ns'} | {us(est('catalog', f'hot_path/{n}'))} |")
EOF
