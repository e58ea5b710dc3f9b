#!/usr/bin/env python3
"""Soak test: celhook under mixed admission and conversion load for a bounded
time, with a config reload and a certificate rotation in the middle.

    scripts/soak.py                       # 10 minutes (the README's figures)
    scripts/soak.py --duration 3600       # an hour
    scripts/soak.py --duration 60 --bin-dir target/debug --scale 0.2   # CI

It builds nothing: pass --bin-dir with `celhook` and `celhook-loadtest`
(default: target/release, after `cargo build --release --workspace`).
Everything runs on 127.0.0.1 in a temporary directory.

Load (open loop, constant rates, every answer checked by celhook-loadtest):
  - admission CREATE of a valid CronTab,        500/s x scale
  - admission UPDATE of a CronTab (transition),  250/s x scale
  - conversion of 100-object batches, 5/s x scale each: CronTab v1beta1 to
    v1, CronTab v1 to v1beta1, Pizza v1alpha1 to v1beta1
At 1/3 of the run a CRD is added to the config directory (a reload); at 1/2
the serving certificate and key are replaced by another pair (a rotation;
clients trust both CAs), and at the end a fresh connection checks that the
new certificate is served.

Fails (exit 1) on any failed or wrong answer, a reload or rotation that did
not happen, or memory growth: the server's resident memory is sampled every
second; the mean of the last quarter of the run may exceed the mean of the
second quarter (after warm-up) by at most --max-growth-mib, and the peak may
not pass --max-rss-mib.
"""
import argparse
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def https_get(url, ca):
    ctx = ssl.create_default_context(cafile=ca)
    with urllib.request.urlopen(url, context=ctx, timeout=10) as r:
        return r.read().decode()


def metric(text, name):
    total = None
    for line in text.splitlines():
        if line.startswith(name) and not line.startswith("#"):
            rest = line[len(name):]
            if rest[:1] in ("{", " "):
                total = (total or 0.0) + float(line.rsplit(" ", 1)[1])
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=int, default=600, help="seconds of measured load (default 600)")
    ap.add_argument("--bin-dir", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release"))
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies every rate")
    ap.add_argument("--max-growth-mib", type=float, default=24.0)
    ap.add_argument("--max-rss-mib", type=float, default=256.0)
    ap.add_argument("--report", help="write the figures as JSON here")
    args = ap.parse_args()

    celhook = os.path.join(args.bin_dir, "celhook")
    loadtest = os.path.join(args.bin_dir, "celhook-loadtest")
    for b in (celhook, loadtest):
        if not os.access(b, os.X_OK):
            sys.exit(f"soak: {b} not found; build with `cargo build --release --workspace` or pass --bin-dir")

    work = tempfile.mkdtemp(prefix="celhook-soak-")
    procs = []
    try:
        # Two certificate sets; clients trust both CAs, as during a CA
        # rollover. The server starts on the first and is rotated to the
        # second by replacing its files, as a Secret update does.
        for n in ("1", "2"):
            subprocess.run([celhook, "certs", "--out-dir", os.path.join(work, "certs" + n), "--days", "2",
                            "--extra-names", "localhost,127.0.0.1"],
                           check=True, capture_output=True)
        ca = os.path.join(work, "trust.pem")
        with open(ca, "w") as out:
            for n in ("1", "2"):
                with open(os.path.join(work, "certs" + n, "ca.crt")) as f:
                    out.write(f.read())
        certs = os.path.join(work, "serving")
        os.makedirs(certs)
        for name in ("tls.crt", "tls.key"):
            shutil.copy(os.path.join(work, "certs1", name), certs)
        config = os.path.join(work, "config")
        os.makedirs(config)
        for name in ("crontab.yaml", "crontab-conversion.yaml", "pizza-conversion.yaml"):
            shutil.copy(os.path.join(ROOT, "manifests", "examples", name), config)

        # Objects of the workloads.
        def write(name, obj):
            path = os.path.join(work, name)
            with open(path, "w") as f:
                json.dump(obj, f)
            return path

        old = write("old.json", {"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                                 "metadata": {"name": "soak", "namespace": "default"},
                                 "spec": {"cronSpec": "* * * * */5", "image": "app:1", "minReplicas": 1, "replicas": 2, "maxReplicas": 5}})
        new = write("new.json", {"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                                 "metadata": {"name": "soak", "namespace": "default"},
                                 "spec": {"cronSpec": "* * * * */5", "image": "app:2", "minReplicas": 1, "replicas": 3, "maxReplicas": 5}})
        crd = os.path.join(config, "crontab.yaml")
        v1beta1 = write("v1beta1.json", {"apiVersion": "example.com/v1beta1", "kind": "CronTab",
                                         "metadata": {"name": "local", "namespace": "default"}, "hostPort": "localhost:1234"})
        v1 = write("v1.json", {"apiVersion": "example.com/v1", "kind": "CronTab",
                               "metadata": {"name": "remote", "namespace": "default"}, "host": "example.com", "port": "2345"})

        pizza = write("pizza.json", {"apiVersion": "restaurant.programming-kubernetes.info/v1alpha1", "kind": "Pizza",
                                     "metadata": {"name": "margherita", "namespace": "default"},
                                     "spec": {"toppings": ["mozzarella", "tomato", "tomato"]}, "status": {"cost": 8.5}})

        port = free_port()
        server_log = open(os.path.join(work, "server.log"), "w")
        server = subprocess.Popen(
            [celhook, "serve", "--config", config, "--listen", f"127.0.0.1:{port}",
             "--tls-cert", os.path.join(certs, "tls.crt"), "--tls-key", os.path.join(certs, "tls.key"),
             "--reload-interval", "1s", "--log-format", "json"],
            stdout=server_log, stderr=subprocess.STDOUT)
        procs.append(server)
        base = f"https://127.0.0.1:{port}"
        last_error = None
        for _ in range(100):
            try:
                if https_get(base + "/readyz", ca).strip() == "ok":
                    break
            except Exception as e:  # not listening yet
                last_error = e
                time.sleep(0.1)
        else:
            sys.exit(f"soak: the server did not become ready ({last_error}); see {work}/server.log")

        warmup = 5
        common = [loadtest, "--ca-file", ca, "--connections", "2", "-d", f"{args.duration}s",
                  "--warmup", f"{warmup}s", "--format", "json", "-q"]

        def rate(r):
            return str(max(1, round(r * args.scale)))

        workloads = {
            "admission-create": common + ["--url", base + "/validate?timeout=10s", "--rate", rate(500), "-c", "64", "admission"],
            "admission-update": common + ["--url", base + "/validate?timeout=10s", "--rate", rate(250), "-c", "64",
                                          "admission", "--crd", crd, "--object", new, "--old-object", old, "--operation", "update"],
            "conversion-up": common + ["--url", base + "/convert", "--rate", rate(5), "-c", "16",
                                       "conversion", "--object", v1beta1, "--to", "example.com/v1", "--batch", "100"],
            "conversion-down": common + ["--url", base + "/convert", "--rate", rate(5), "-c", "16",
                                         "conversion", "--object", v1, "--to", "example.com/v1beta1", "--batch", "100"],
            "conversion-pizza": common + ["--url", base + "/convert", "--rate", rate(5), "-c", "16",
                                          "conversion", "--object", pizza, "--to",
                                          "restaurant.programming-kubernetes.info/v1beta1", "--batch", "100"],
        }
        runs = {}
        for name, cmd in workloads.items():
            out = open(os.path.join(work, f"{name}.json"), "w")
            runs[name] = (subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE), out)
            procs.append(runs[name][0])

        samples = []
        events = []
        start = time.time() + warmup
        end = start + args.duration
        reloaded = rotated = False
        while time.time() < end + 2:
            t = time.time() - start
            samples.append((round(t, 1), rss_mib(server.pid)))
            if not reloaded and t >= args.duration / 3:
                shutil.copy(os.path.join(ROOT, "tests", "fixtures", "fuzz", "widget.yaml"), config)
                events.append((round(t, 1), "config reload: widget.yaml added"))
                reloaded = True
            if not rotated and t >= args.duration / 2:
                rotate(certs, work)
                events.append((round(t, 1), "certificate rotated"))
                rotated = True
            if server.poll() is not None:
                sys.exit(f"soak: the server exited ({server.returncode}); see {work}/server.log")
            time.sleep(1)

        failures = []
        results = {}
        for name, (proc, out) in runs.items():
            _, err = proc.communicate(timeout=120)
            out.close()
            with open(os.path.join(work, f"{name}.json")) as f:
                text = f.read()
            try:
                report = json.loads(text)
            except ValueError:
                failures.append(f"{name}: no report ({err.decode()[-500:]})")
                continue
            results[name] = report
            if proc.returncode != 0 or report["failed"] != 0:
                failures.append(f"{name}: {report['failed']} failed of {report['requests']}: {report.get('errors')}")

        # The rotation and reload took, as seen from outside.
        metrics = https_get(base + "/metrics", ca)
        generation = metric(metrics, "celhook_config_generation")
        cert_reloads = metric(metrics, 'celhook_tls_cert_reloads_total{result="success"}')
        if generation != 2:
            failures.append(f"config generation is {generation}, expected 2 after one reload")
        if not cert_reloads:
            failures.append("no successful certificate reload counted")
        served = served_serial(port, ca)
        with open(os.path.join(certs, "tls.crt")) as f:
            on_disk = ssl.PEM_cert_to_DER_cert(f.read())
        if served != on_disk:
            failures.append("new connections are not served the rotated certificate")

        rss = [r for _, r in samples]
        q = max(1, len(rss) // 4)
        second_quarter = sum(rss[q:2 * q]) / len(rss[q:2 * q])
        last_quarter = sum(rss[-q:]) / q
        growth = last_quarter - second_quarter
        peak = max(rss)
        if growth > args.max_growth_mib:
            failures.append(f"memory grew {growth:.1f} MiB (second quarter {second_quarter:.1f}, last {last_quarter:.1f}; bound {args.max_growth_mib})")
        if peak > args.max_rss_mib:
            failures.append(f"peak RSS {peak:.1f} MiB over the bound of {args.max_rss_mib}")

        figures = {
            "duration_s": args.duration,
            "scale": args.scale,
            "workloads": {n: {k: r.get(k) for k in ("requests", "ok", "failed", "throughput_rps", "objects_per_s", "latency")} for n, r in results.items()},
            "rss_mib": {"start": rss[0], "second_quarter_mean": round(second_quarter, 1),
                        "last_quarter_mean": round(last_quarter, 1), "growth": round(growth, 1), "peak": peak},
            "events": events,
            "failures": failures,
        }
        for name, r in results.items():
            lat = r.get("latency") or {}
            print(f"{name:17} {r['requests']:>8} requests  {r['failed']} failed  {r['throughput_rps']:8.1f}/s  "
                  f"p50 {lat.get('p50_ms', 0):.2f} ms  p99 {lat.get('p99_ms', 0):.2f} ms  max {lat.get('max_ms', 0):.2f} ms")
        for t, what in events:
            print(f"at {t:7.1f} s: {what}")
        print(f"RSS MiB: start {rss[0]:.1f}, second quarter {second_quarter:.1f}, last quarter {last_quarter:.1f}, "
              f"growth {growth:+.1f} (bound {args.max_growth_mib}), peak {peak:.1f} (bound {args.max_rss_mib})")
        if args.report:
            with open(args.report, "w") as f:
                json.dump({**figures, "rss_samples": samples}, f, indent=1)
        if failures:
            print("soak: FAILED\n  " + "\n  ".join(failures), file=sys.stderr)
            print(f"soak: logs kept in {work}", file=sys.stderr)
            work = None
            return 1
        print("soak: ok")
        return 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        if work and not os.environ.get("SOAK_KEEP"):
            shutil.rmtree(work, ignore_errors=True)


def rotate(certs, work):
    """Swaps the second certificate set in, each file written aside and
    renamed over the served one."""
    for name in ("tls.key", "tls.crt"):
        tmp = os.path.join(certs, f".{name}.new")
        shutil.copy(os.path.join(work, "certs2", name), tmp)
        os.replace(tmp, os.path.join(certs, name))


def served_serial(port, ca):
    """The DER of the certificate a fresh TLS connection is served."""
    ctx = ssl.create_default_context(cafile=ca)
    ctx.check_hostname = False
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        with ctx.wrap_socket(sock, server_hostname="localhost") as tls:
            return tls.getpeercert(binary_form=True)


if __name__ == "__main__":
    sys.exit(main())
