#!/usr/bin/env python3
"""The report of scripts/bench-ratios.sh: reads the results it left in
the work directory (peers, criterion's estimates in the target directory,
the paired ratios, the server runs, the tail runs and the idle probe) and
prints issue 6's and issue 17's bars with their measured values, as
Markdown on standard output. Each part it finds no results for says so.

    python3 scripts/bench-report.py WORK_DIR CARGO_TARGET_DIR

bench-ratios.sh runs it last; with every phase skipped it renders the
last run's results again.
"""
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

def server_ratios(tails):
    """The server's own p99 / p50 of each run whose histogram read."""
    return [p99 / p50 for p50, p99 in filter(None, (server_spread(t) for _, t in tails))]

halves, eighth = numbered("tail-"), runs("tail-eighth.json")
if halves:
    maxes = runs("pinned-max-*.json")
    print("- placement: " + (f"server pinned to CPU 0, generator to the other CPUs; the pinned server's closed-loop maximum "
                             f"{statistics.median(m['throughput_rps'] for m in maxes):.0f}/s (median of {len(maxes)})"
                             if halves[0][1].get("pinned") else "server and generator share every CPU (TAIL_SHARED, or one CPU, or no taskset)"))
    for i, t in halves:
        tail_lines(t, f"at 50% of the max, run {i}")
    ratios = server_ratios(halves)
    if ratios:
        print(f"- **the server's own p99 / p50 at 50% of the max: median {statistics.median(ratios):.2f}** of {len(ratios)} runs "
              f"({', '.join(f'{r:.2f}' for r in ratios)}; target <= 3)")
else:
    print("- at 50% of the max: no results")
polled = numbered("tail-poll-")
if polled:
    try:
        halt_poll = json.load(open(os.path.join(work, "server", "halt-poll.json")))
        polling = (f"the guest's halt polling at {halt_poll['set_ns'] / 1000:g} us "
                   f"(it was {halt_poll['was_ns'] / 1000:g} us; TAIL_HALT_POLL_NS)")
    except (OSError, ValueError, KeyError, TypeError):
        polling = "the guest's halt polling changed (TAIL_HALT_POLL_NS)"
    for i, t in polled:
        tail_lines(t, f"at 50% of the max with {polling}, run {i}")
    ratios = server_ratios(polled)
    if ratios:
        print(f"- the server's own p99 / p50 at 50% of the max with {polling}: median {statistics.median(ratios):.2f} "
              f"of {len(ratios)} runs ({', '.join(f'{r:.2f}' for r in ratios)}); a diagnosis of the machine, the bar is "
              "read on the runs above")
if eighth:
    tail_lines(eighth[0], "at 1/8 of the max, for comparison")
# An open-loop generator that cannot keep its rate queues the requests due
# and sends them as it can: the server then takes bursts, not the steady
# half load the bar asks about, and its histogram holds them.
if halves and eighth:
    steady = eighth[0]["latency"]["p50_ms"]
    def late(t, q):
        return t["latency"][q] > 5 and t["latency"][q] > 10 * steady
    for tails, which in ((halves, ""), (polled, " with the halt polling set")):
        behind = [i for i, t in tails if late(t, "p50_ms")]
        if behind:
            print(f"- **the generator fell behind at 50% of the max{which}** in run{'s' if len(behind) > 1 else ''} "
                  f"{', '.join(map(str, behind))}: its p50 above 5 ms and ten times its {steady:.3f} ms at 1/8, its own queue; "
                  "the server took the requests in bursts, so the tail there is not a steady half load's")
        # Behind for a stretch only: the median kept, the slowest tenth not.
        partly = [i for i, t in tails if i not in behind and late(t, "p90_ms")]
        if partly:
            print(f"- the generator fell behind for part of run{'s' if len(partly) > 1 else ''} {', '.join(map(str, partly))} "
                  f"at 50% of the max{which}: its p90 above 5 ms and ten times its p50 at 1/8; bursts in that stretch")

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
