#!/usr/bin/env python3
"""Writes tests/fixtures/perf/review-update-applied.json: the peer workload's
UPDATE (review-update.json) as an API server sends it for an object managed
by `kubectl apply` and an operator: the same spec and status, plus the
`kubectl.kubernetes.io/last-applied-configuration` annotation and the
managedFields of both managers (fieldsV1 sets mirroring the fields each
owns, list items keyed by `name` as for list-map keys).

    scripts/gen-applied-review.py
"""
import copy, json, os

HERE = os.path.dirname(os.path.abspath(__file__))
PERF = os.path.join(HERE, "..", "tests", "fixtures", "perf")


def fields(v):
    """The fieldsV1 set of a value: `f:` per field, `k:` per named item."""
    if isinstance(v, dict):
        return {"f:" + k: fields(x) for k, x in v.items()}
    if isinstance(v, list) and v and all(isinstance(x, dict) and "name" in x for x in v):
        out = {}
        for x in v:
            item = fields(x)
            item["."] = {}
            out["k:" + json.dumps({"name": x["name"]}, separators=(",", ":"))] = item
        return out
    return {}


def applied(obj, time):
    obj = copy.deepcopy(obj)
    meta = obj["metadata"]
    last = {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": meta.get("labels", {})},
        "spec": obj["spec"],
    }
    meta.setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = (
        json.dumps(last, separators=(",", ":")) + "\n"
    )
    meta["managedFields"] = [
        {
            "manager": "kubectl-client-side-apply",
            "operation": "Update",
            "apiVersion": obj["apiVersion"],
            "time": time,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {
                    "f:annotations": {".": {}, **fields(meta["annotations"])},
                    "f:labels": {".": {}, **fields(meta.get("labels", {}))},
                },
                "f:spec": {".": {}, **fields(obj["spec"])},
            },
        },
        {
            "manager": "platform-operator",
            "operation": "Update",
            "apiVersion": obj["apiVersion"],
            "time": time,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {".": {}, **fields(obj.get("status", {}))}},
            "subresource": "status",
        },
    ]
    return obj


review = json.load(open(os.path.join(PERF, "review-update.json")))
req = review["request"]
# Unstructured objects are written with their keys in order, as the API
# server's encoder writes them.
sort = lambda v: json.loads(json.dumps(v, sort_keys=True))
req["object"] = sort(applied(req["object"], "2026-11-20T10:00:00Z"))
req["oldObject"] = sort(applied(req["oldObject"], "2026-11-19T10:00:00Z"))
with open(os.path.join(PERF, "review-update-applied.json"), "w") as f:
    json.dump(review, f, indent=2)
    f.write("\n")
