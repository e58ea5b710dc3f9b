#!/usr/bin/env python3
"""The availability reproductions against a release binary on 127.0.0.1.

Each attack runs against a fresh `celhook serve` (release build, default
flags unless said) while a probe sends normal reviews on fresh connections;
the script prints one line per attack with the figures and whether the bound
of the availability issue holds, and exits 1 if any does not.

    cargo build --release
    scripts/abuse.py                  # every attack, about two minutes
    scripts/abuse.py heads silent     # some of them

Only the standard library: raw TLS sockets, hand-written HTTP/1.1 and
HTTP/2 frames (the attacks are malformed on purpose), /proc for memory.
"""

import argparse
import json
import os
import re
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRONTAB_CRD = open(os.path.join(ROOT, "manifests/examples/crontab.yaml")).read()

PATTERN_CRD = open(os.path.join(ROOT, "tests/fixtures/crds/patterns.yaml")).read()


def review(kind, obj, uid="u1"):
    group, version = obj["apiVersion"].split("/")
    return json.dumps({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": uid, "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
            "name": obj["metadata"]["name"], "namespace": "default", "operation": "CREATE",
            "userInfo": {"username": "abuse"}, "object": obj,
        },
    }).encode()


def crontab_review(replicas):
    return review("CronTab", {
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"cronSpec": "* * * * */5", "image": "x", "minReplicas": 1,
                 "replicas": replicas, "maxReplicas": 10},
    })


class Server:
    """`celhook serve` on a free port, its log in a temp file."""

    def __init__(self, binary, args=(), config=None):
        self.log = tempfile.NamedTemporaryFile("w+", prefix="celhook-", suffix=".log")
        cmd = [binary, "serve", "--listen", "127.0.0.1:0", "--log-format", "json"]
        if config:
            cmd += ["--config", config]
        cmd += list(args)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.log,
                                     env={**os.environ, "RUST_LOG": "warn,celhook=info"})
        self.port = None
        deadline = time.time() + 30
        while self.port is None:
            if time.time() > deadline or self.proc.poll() is not None:
                raise RuntimeError("celhook did not start: " + open(self.log.name).read())
            for line in open(self.log.name):
                m = re.search(r'"local_addr":"127\.0\.0\.1:(\d+)"', line)
                if m:
                    self.port = int(m.group(1))
            time.sleep(0.05)
        self.peak_kib = 0

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    kib = int(line.split()[1])
                    self.peak_kib = max(self.peak_kib, kib)
                    return kib
        return 0

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()


def tls(port, alpn=("http/1.1",), source=None):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(list(alpn))
    sock = socket.create_connection(("127.0.0.1", port), timeout=10,
                                    source_address=(source, 0) if source else None)
    return ctx.wrap_socket(sock, server_hostname="localhost")


def post(port, path, body, timeout=10.0):
    """POST over a fresh HTTP/1.1 connection; (status, seconds, body)."""
    started = time.time()
    conn = tls(port)
    conn.settimeout(timeout)
    head = (f"POST {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n").encode()
    try:
        conn.sendall(head + body)
    except OSError:
        pass  # refused before the whole body was sent: read the answer
    chunks = []
    try:
        while True:
            chunk = conn.recv(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    except (socket.timeout, ssl.SSLError, ConnectionError):
        pass
    conn.close()
    data = b"".join(chunks)
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0
    return status, time.time() - started, data.split(b"\r\n\r\n", 1)[-1]


class Probe(threading.Thread):
    """Normal reviews on fresh connections, every 100 ms: the slowest wins."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.slowest, self.count, self.failed = port, 0.0, 0, 0
        self.stop_flag = threading.Event()

    def run(self):
        while not self.stop_flag.is_set():
            try:
                status, took, _ = post(self.port, "/validate?timeout=10s", crontab_review(3))
                self.failed += status != 200
            except OSError:
                took = 10.0
                self.failed += 1
            self.slowest = max(self.slowest, took)
            self.count += 1
            self.stop_flag.wait(0.1)

    def finish(self):
        self.stop_flag.set()
        self.join()
        return self.slowest


def h2_frame(kind, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def hpack_literal(name, value):
    def integer(n):
        if n < 127:
            return bytes([n])
        out, n = [127], n - 127
        while n >= 128:
            out.append(n % 128 | 0x80)
            n //= 128
        return bytes(out + [n])
    return b"\x00" + integer(len(name)) + name.encode() + integer(len(value)) + value.encode()


def h2_connect(port):
    conn = tls(port, alpn=("h2",))
    conn.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + h2_frame(0x4, 0, 0, b""))
    return conn


RESULTS = []


def report(name, ok, text):
    RESULTS.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {text}", flush=True)


def attack_heads(binary):
    """Two 256 MiB /convert heads over HTTP/1.1 and two over HTTP/2."""
    server = Server(binary)
    probe = Probe(server.port)
    held = []
    for _ in range(2):
        c = tls(server.port)
        c.sendall(b"POST /convert HTTP/1.1\r\nhost: x\r\ncontent-length: 268435456\r\n\r\n")
        held.append(c)
    c = h2_connect(server.port)
    for stream in (1, 3):
        block = b"".join(hpack_literal(n, v) for n, v in [
            (":method", "POST"), (":scheme", "https"), (":path", "/convert"),
            (":authority", "x"), ("content-length", "268435456")])
        c.sendall(h2_frame(0x1, 0x4, stream, block))
    held.append(c)
    probe.start()
    time.sleep(5)
    slowest = probe.finish()
    report("heads", slowest < 1 and probe.failed == 0,
           f"4 heads declaring 256 MiB held for 5 s; {probe.count} reviews, slowest {slowest * 1000:.0f} ms, {probe.failed} failed (bound: 1 s)")
    server.stop()


def attack_silent(binary):
    """200 TCP connections that never send a byte."""
    server = Server(binary)
    silent = [socket.create_connection(("127.0.0.1", server.port), source_address=(f"127.0.0.{2 + i % 4}", 0))
              for i in range(200)]
    probe = Probe(server.port)
    probe.start()
    time.sleep(3)
    slowest = probe.finish()
    report("silent", slowest < 1 and probe.failed == 0,
           f"200 silent TCP connections; {probe.count} reviews on fresh connections, slowest {slowest * 1000:.0f} ms (bound: 1 s)")
    for s in silent:
        s.close()
    server.stop()


def attack_h2_memory(binary):
    """40 connections x 128 streams of 60 KiB header lists, then 3,000 idle
    HTTP/2 connections; resident memory sampled throughout."""
    server = Server(binary)
    probe = Probe(server.port)
    probe.start()
    base = server.rss_kib()
    conns = []
    filler = "x" * (60 * 1024)
    for i in range(40):
        try:
            c = h2_connect(server.port)
        except OSError:
            continue
        frames = b""
        for s in range(128):
            block = b"".join(hpack_literal(n, v) for n, v in [
                (":method", "POST"), (":scheme", "https"), (":path", "/validate"),
                (":authority", "x"), ("content-length", "1000"), ("x-filler", filler)])
            first, rest = block[:16000], block[16000:]
            frames += h2_frame(0x1, 0, 2 * s + 1, first)
            while rest:
                part, rest = rest[:16000], rest[16000:]
                frames += h2_frame(0x9, 0 if rest else 0x4, 2 * s + 1, part)
        try:
            c.sendall(frames)
        except OSError:
            pass
        conns.append(c)
        server.rss_kib()
    for _ in range(20):
        time.sleep(0.1)
        server.rss_kib()
    header_peak = server.peak_kib
    for c in conns:
        c.close()
    idle = []
    for i in range(3000):
        try:
            idle.append(h2_connect(server.port) if i % 2 else tls(server.port))
        except OSError:
            pass
        if i % 100 == 0:
            server.rss_kib()
    time.sleep(1)
    server.rss_kib()
    slowest = probe.finish()
    report("http2-memory", server.peak_kib < 256 * 1024 and slowest < 1,
           f"RSS {base // 1024} MiB idle, {header_peak // 1024} MiB peak under the header flood, "
           f"{server.peak_kib // 1024} MiB peak with 3,000 idle connections too (bound: 256 MiB); "
           f"slowest review {slowest * 1000:.0f} ms")
    for c in idle:
        c.close()
    server.stop()


def attack_slow_rule(binary):
    """A rule compiling a pattern per item, ?timeout=3s, four at once."""
    config = tempfile.mkdtemp(prefix="celhook-abuse-")
    open(os.path.join(config, "crontab.yaml"), "w").write(CRONTAB_CRD)
    open(os.path.join(config, "patterns.yaml"), "w").write(PATTERN_CRD)
    server = Server(binary, config=config)
    items = [{"s": "abc", "p": "^[\\pL\\pN]{1,%d}$" % (40 + i % 900)} for i in range(5000)]
    body = review("Pattern", {"apiVersion": "example.com/v1", "kind": "Pattern",
                              "metadata": {"name": "p", "namespace": "default"}, "spec": {"l": items}})
    results = []

    def slow():
        results.append(post(server.port, "/validate?timeout=3s", body, timeout=30))

    threads = [threading.Thread(target=slow) for _ in range(4)]
    probe = Probe(server.port)
    for t in threads:
        t.start()
    probe.start()
    for t in threads:
        t.join()
    time.sleep(0.5)
    slowest = probe.finish()
    statuses = sorted({r[0] for r in results})
    longest = max(r[1] for r in results)
    report("slow-rule", longest < 3.5 and slowest < 1,
           f"4 reviews of {len(body) // 1024} KiB with ?timeout=3s answered {statuses} after at most {longest:.2f} s "
           f"(bound: 3.5 s); normal reviews meanwhile: slowest {slowest * 1000:.0f} ms (bound: 1 s)")
    server.stop()


# The flags of manifests/base/deployment.yaml (a 256Mi pod).
MANIFEST_FLAGS = ["--max-in-flight-bytes=33554432", "--max-convert-in-flight-bytes=134217728",
                  "--max-convert-request-bytes=31457280"]


def attack_big_conversion(binary, flags=()):
    """A ConversionReview of 18,000 Pizzas at the schema's bound."""
    server = Server(binary, args=flags)
    pizzas = []
    for i in range(18000):
        toppings = [f"topping-{j:03d}-{'x' * 14}" for j in range(100)]
        pizzas.append({"apiVersion": "restaurant.programming-kubernetes.info/v1alpha1", "kind": "Pizza",
                       "metadata": {"name": f"p{i}", "namespace": "default", "uid": f"uid-{i}"},
                       "spec": {"toppings": toppings}})
    body = json.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                       "request": {"uid": "c1", "desiredAPIVersion": "restaurant.programming-kubernetes.info/v1beta1",
                                   "objects": pizzas}}).encode()
    probe = Probe(server.port)
    probe.start()
    result = []
    t = threading.Thread(target=lambda: result.append(post(server.port, "/convert", body, timeout=60)))
    t.start()
    while t.is_alive():
        server.rss_kib()
        time.sleep(0.05)
    slowest = probe.finish()
    status, took, answer = result[0]
    try:
        result = json.loads(answer)["response"]
        outcome = result["result"]["status"] + f", {len(result.get('convertedObjects', []))} objects"
    except (ValueError, KeyError):
        outcome = answer[:80]
    name = "big-conversion" + (" (manifests' flags)" if flags else "")
    report(name, took < 25 and slowest < 1,
           f"{len(body) / 1e6:.0f} MB review of 18,000 Pizzas of 100 toppings: {status} {outcome} after {took:.1f} s, "
           f"peak RSS {server.peak_kib // 1024} MiB; normal reviews meanwhile: slowest {slowest * 1000:.0f} ms")
    server.stop()


def attack_half_written(binary):
    """A CRD file rewritten in place, the writer stalling before the rules."""
    config = tempfile.mkdtemp(prefix="celhook-abuse-")
    path = os.path.join(config, "crontab.yaml")
    open(path, "w").write(CRONTAB_CRD)
    server = Server(binary, config=config)
    cut = CRONTAB_CRD.index("              x-kubernetes-validations:")
    allowed = checked = 0
    with open(path, "w") as f:
        f.write(CRONTAB_CRD[:cut])
        f.flush()
        until = time.time() + 3
        while time.time() < until:
            status, _, body = post(server.port, "/validate?timeout=10s", crontab_review(20))
            allowed += b'"allowed":true' in body
            checked += 1
        f.write(CRONTAB_CRD[cut:])
    report("half-written", allowed == 0,
           f"writer stalled 3 s before the rules: {allowed} of {checked} invalid objects allowed (bound: 0)")
    server.stop()


ATTACKS = {
    "heads": attack_heads,
    "silent": attack_silent,
    "http2-memory": attack_h2_memory,
    "slow-rule": attack_slow_rule,
    "big-conversion": attack_big_conversion,
    "big-conversion-manifests": lambda binary: attack_big_conversion(binary, MANIFEST_FLAGS),
    "half-written": attack_half_written,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("attacks", nargs="*", choices=[[]] + list(ATTACKS), default=[])
    parser.add_argument("--bin", default=os.path.join(ROOT, "target/release/celhook"))
    args = parser.parse_args()
    for name in args.attacks or ATTACKS:
        ATTACKS[name](args.bin)
    sys.exit(0 if all(RESULTS) else 1)


if __name__ == "__main__":
    main()
