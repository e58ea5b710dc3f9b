#!/usr/bin/env python3
"""Writes the seed corpus of each fuzz target into fuzz/corpus/<target>/.

Seeds come from the repository's own fixtures: admission reviews, the
example CRDs and conversions, the Widget fuzz CRD, and every expression of
the conformance suite. Re-run after adding fixtures; the fuzzer's own finds
are merged into the same directories (see fuzz/README.md).
"""
import glob
import hashlib
import json
import os
import sys

import yaml  # PyYAML

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    d = os.path.join(ROOT, "fuzz", "corpus", target)
    os.makedirs(d, exist_ok=True)
    name = "seed-" + hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def admission(obj, old=None, operation="CREATE", api="admission.k8s.io/v1"):
    group, _, version = obj["apiVersion"].rpartition("/")
    req = {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": group, "version": version, "kind": obj["kind"]},
        "resource": {"group": group, "version": version, "resource": obj["kind"].lower() + "s"},
        "name": obj["metadata"].get("name", ""),
        "namespace": obj["metadata"].get("namespace", "default"),
        "operation": operation,
        "userInfo": {"username": "fuzz"},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
    }
    return json.dumps({"apiVersion": api, "kind": "AdmissionReview", "request": req})


def main():
    for path in glob.glob(os.path.join(ROOT, "tests/fixtures/admission/*.json")) + glob.glob(
        os.path.join(ROOT, "tests/fixtures/perf/review-*.json")
    ):
        put("admission_review", open(path, "rb").read())
    sample = json.load(open(os.path.join(ROOT, "tests/fixtures/fuzz/widget-sample.json")))
    put("admission_review", admission(sample))
    put("admission_review", admission(sample, sample, "UPDATE", "admission.k8s.io/v1beta1"))

    configs = glob.glob(os.path.join(ROOT, "manifests/examples/*.yaml")) + glob.glob(
        os.path.join(ROOT, "tests/fixtures/crds/*/*.yaml")
    ) + [os.path.join(ROOT, "tests/fixtures/fuzz/widget.yaml")]
    examples = []
    for path in configs:
        text = open(path).read()
        put("config_load", text)
        for doc in yaml.safe_load_all(text):
            if doc and doc.get("kind") == "Conversion":
                examples += doc["spec"].get("examples", [])
    for obj in examples:
        group, _, version = obj["apiVersion"].rpartition("/")
        for desired in ["v1", "v2", "v1beta1", "v1alpha1"]:
            for api in ["apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1"]:
                request = {
                    "uid": "0000-1111",
                    "desiredAPIVersion": f"{group}/{desired}",
                    "objects": [obj, obj],
                }
                review = {"apiVersion": api, "kind": "ConversionReview", "request": request}
                put("conversion_review", json.dumps(review))
                # As the API server writes it (Go's TypeMeta: kind first),
                # the head the one-pass reader starts from.
                review = {"kind": "ConversionReview", "apiVersion": api, "request": request}
                put("conversion_review", json.dumps(review))

    widget = yaml.safe_load(open(os.path.join(ROOT, "tests/fixtures/fuzz/widget.yaml")))

    def rules(node):
        for r in node.get("x-kubernetes-validations", []):
            yield r["rule"]
        for child in node.get("properties", {}).values():
            yield from rules(child)
        if "items" in node:
            yield from rules(node["items"])

    schema = widget["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for rule in rules(schema):
        put("cel_compile", b"\x01" + rule.encode())
    for path in glob.glob(os.path.join(ROOT, "tests/conformance/expr/*.yaml")):
        for case in yaml.safe_load(open(path)).get("cases", []):
            if "expr" in case:
                put("cel_compile", b"\x00" + case["expr"].encode())

    for target in ["cel_eval", "conversion"]:
        for i in range(8):
            put(target, bytes(range(i * 31 % 256, 256)) + bytes(range(0, 64 * i % 256)))


if __name__ == "__main__":
    sys.exit(main())
