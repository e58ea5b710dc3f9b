#!/usr/bin/env bash
# Runs the peer CEL engines (a writable copy of ../shared/peer-bench), celhook's
# criterion benchmark (then issue 17's ratios timed in turns, benches/paired.rs
# and scripts/celjs-in-turns.sh,
# and the conversion's peak-memory count, examples/convert_peak_memory.rs) and
# the server load tests back to back (throughput, then the tail at half the
# maximum and at an eighth, then what an idle CPU costs a review in process
# and a 256 KiB chase with no celhook code, examples/idle_cost.rs), then
# prints (scripts/bench-report.py) the targets of issues 6 and 17 with
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
# at half the maximum, 3; the median is the bar's), TAIL_HALT_POLL_NS (set:
# as many runs again with the guest's halt polling at that many ns, root
# only, put back after; a diagnosis of the VM), TAIL_SHARED (set:
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
# Checked before any phase runs: a typo must not cost a quarter hour. No
# leading zero: the kernel would read the value as octal.
if [[ -n ${TAIL_HALT_POLL_NS:-} && ! $TAIL_HALT_POLL_NS =~ ^(0|[1-9][0-9]*)$ ]]; then
  echo "TAIL_HALT_POLL_NS: nanoseconds, a whole number without leading zeros, not '$TAIL_HALT_POLL_NS'" >&2
  exit 2
fi
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
  # With TAIL_HALT_POLL_NS (root, a guest with the haltpoll cpuidle
  # governor): the same runs again with the guest's halt polling set to it,
  # put back when they end or the script stops. On a VM whose guest halts
  # at once they show how much of the tail is the machine's idle (the
  # docs' "The tail on a virtual machine"). Nothing else here changes the
  # machine, and nothing does unless asked.
  POLL=/sys/module/haltpoll/parameters/guest_halt_poll_ns
  if [[ -n ${TAIL_HALT_POLL_NS:-} ]]; then
    if [[ -w $POLL ]]; then
      poll_was=$(cat "$POLL")
      # The servers first: a failed write back must not keep them running.
      trap 'cleanup; echo "$poll_was" > "$POLL" || echo "could not put $POLL back to $poll_was" >&2' EXIT
      echo "$TAIL_HALT_POLL_NS" > "$POLL"
      for i in $(seq 1 "$TAIL_RUNS"); do
        load "tail $i with the guest's halt polling at $TAIL_HALT_POLL_NS ns start"
        tail_run "tail-poll-$i" "$half"
      done
      echo "$poll_was" > "$POLL"
      trap cleanup EXIT
      echo "{\"set_ns\": $TAIL_HALT_POLL_NS, \"was_ns\": $poll_was}" > "$WORK/server/halt-poll.json"
      load "tail with halt polling end (put back to $poll_was ns)"
    else
      echo "TAIL_HALT_POLL_NS: $POLL is not writable here (needs root and a guest with the haltpoll cpuidle driver); those runs skipped" >&2
    fi
  fi
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
# `walk` is no celhook code, a 256 KiB chase of a review's order of time
# (18 us warm against 7-11): the machine's own share of what the pause
# costs.
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
python3 "$ROOT/scripts/bench-report.py" "$WORK" "$TARGET"
