#!/usr/bin/env python3
"""Writes tests/fixtures/perf/ from the peer harness's workload.json, so that
celhook's benchmarks and load tests run the same object and rules as the peer
engines (../shared/peer-bench).

    scripts/gen-perf-fixtures.py [path/to/workload.json]

Outputs (checked in; re-run only when the workload changes):
  core/appdeployment.yaml     the 17 core rules a CRD can carry + the 2 transition rules
  norules/appdeployment.yaml  the same CRD without any rule (the stack's floor)
  k8slib/appdeployment.yaml   core + the Kubernetes-library rules celhook compiles today
  pending/appdeployment.yaml  core + every Kubernetes-library rule (refused until the
                              library functions land; move to k8slib/ then)
  review-create.json, review-update.json, review-create-invalid.json
  review-create-40-ports.json  the CREATE with 20 more distinct ports before
                              `metrics` (the last): with review-create.json,
                              what a loop over the ports costs per element
"""
import copy, json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "fixtures", "perf")
src = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/peer-bench/workload.json"
wl = json.load(open(src))

# Root metadata other than name/generateName is invisible to CRD rules.
NOT_IN_CRD = {"labels-required", "labels-size", "name-matches-label"}
# Library functions celhook does not compile yet (another branch adds them).
PENDING = {"k8s-format", "k8s-quantity", "k8s-url", "k8s-cidr"}
# Same function, on a field a CRD rule can read (root labels are invisible).
ADAPTED = {
    "k8s-lower-ascii": "self.spec.nodeSelector['kubernetes.io/os'].lowerAscii() == 'linux'",
}


def s(max_len=None, **kw):
    d = {"type": "string"}
    if max_len:
        d["maxLength"] = max_len
    d.update(kw)
    return d


I = {"type": "integer"}
B = {"type": "boolean"}


def obj(props, **kw):
    d = {"type": "object", "properties": props}
    d.update(kw)
    return d


probe = obj({"path": s(256), "port": I, "periodSeconds": I, "failureThreshold": I})
resource_list = {"type": "object", "additionalProperties": s(64)}
spec = obj({
    "appName": s(63), "image": s(512), "imagePullPolicy": s(16, enum=["Always", "IfNotPresent", "Never"]),
    "replicas": I, "minReplicas": I, "maxReplicas": I, "paused": B,
    "serviceAccountName": s(253), "priorityClassName": s(253),
    "revisionHistoryLimit": I, "progressDeadlineSeconds": I, "terminationGracePeriodSeconds": I,
    "cpuRequestMillis": I, "cpuLimitMillis": I, "memoryRequestMiB": I, "memoryLimitMiB": I,
    "logLevel": s(16), "environment": s(63), "maxSurgePercent": I, "maxUnavailablePercent": I,
    "endpoint": s(2048), "allowedCIDR": s(64),
    "ports": {"type": "array", "maxItems": 64,
              "items": obj({"name": s(63), "port": I, "protocol": s(8)}, required=["name", "port"])},
    "strategy": obj({"type": s(32), "rollingUpdate": obj({"maxSurge": I, "maxUnavailable": I})}),
    "autoscaling": obj({"enabled": B, "minReplicas": I, "maxReplicas": I, "targetCPUUtilizationPercentage": I}),
    "tls": obj({"enabled": B, "secretName": s(253), "minVersion": s(8)}),
    "resources": obj({"requests": resource_list, "limits": resource_list}),
    "probes": obj({"liveness": probe, "readiness": probe}),
    "env": {"type": "array", "maxItems": 4096, "items": obj({"name": s(256), "value": s(4096)}, required=["name"])},
    "nodeSelector": {"type": "object", "additionalProperties": s(63)},
    "tolerations": {"type": "array", "maxItems": 64, "items": obj({
        "key": s(253), "operator": s(16), "value": s(63), "effect": s(32), "tolerationSeconds": I})},
})
status = obj({"observedGeneration": I, "readyReplicas": I, "conditions": {
    "type": "array", "maxItems": 32, "items": obj({
        "type": s(64), "status": s(16), "reason": s(128), "lastTransitionTime": s(64, format="date-time")})}})
root = obj({"apiVersion": s(), "kind": s(), "metadata": {"type": "object"}, "spec": spec, "status": status})


def validation(r, rule=None):
    # The message is the rule id: benches and tests find rules by it.
    return {"rule": rule or r["rule"], "message": r["id"]}


core = [r for r in wl["rules"] if r["id"] not in NOT_IN_CRD]
assert len(core) == 17 and all(r["self"] == "spec" for r in core)
spec_rules = [validation(r) for r in core] + [validation(r) for r in wl["transitionRules"]]
kube_now = [validation(r, ADAPTED.get(r["id"])) for r in wl["kubeRules"] if r["id"] not in PENDING]
kube_all = [validation(r, ADAPTED.get(r["id"])) for r in wl["kubeRules"]]


def crd(spec_v, root_v):
    schema = copy.deepcopy(root)
    if spec_v:
        schema["properties"]["spec"]["x-kubernetes-validations"] = spec_v
    if root_v:
        schema["x-kubernetes-validations"] = root_v
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "appdeployments.platform.example.com"},
        "spec": {
            "group": "platform.example.com",
            "scope": "Namespaced",
            "names": {"plural": "appdeployments", "singular": "appdeployment",
                      "kind": "AppDeployment", "listKind": "AppDeploymentList"},
            "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": schema}}],
        },
    }


HEADERS = {
    "core": "The peer workload's 17 core rules a CRD can carry (of 20: labels-required, labels-size and\n"
            "# name-matches-label read root metadata.labels, which CRD rules cannot see) and its 2 transition rules.",
    "norules": "The same CRD without any rule: the floor of the stack (decode, walk, encode).",
    "k8slib": "Core rules plus the workload's Kubernetes-library rules celhook compiles today\n"
              "# (k8s-lower-ascii adapted: root metadata.labels is invisible to CRD rules).",
    "pending": "Core rules plus ALL the workload's Kubernetes-library rules. celhook refuses it until\n"
               "# format(), quantity(), url(), cidr()/ip() land (another branch); then replace k8slib/ with it.",
}


def write_yaml(name, doc):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    # JSON is valid YAML; the loader reads *.yaml with a YAML parser.
    with open(os.path.join(d, "appdeployment.yaml"), "w") as f:
        f.write(f"# Generated by scripts/gen-perf-fixtures.py from the peer-bench workload.json.\n# {HEADERS[name]}\n")
        f.write(json.dumps(doc, indent=2) + "\n")


write_yaml("core", crd(spec_rules, []))
write_yaml("norules", crd([], []))
write_yaml("k8slib", crd(spec_rules, kube_now))
write_yaml("pending", crd(spec_rules, kube_all))


def sorted_keys(v):
    """A custom resource as the API server writes it: an unstructured object,
    whose maps Go's encoder writes in key order (the review's own fields
    keep their struct order, `operation` before `object`)."""
    if isinstance(v, dict):
        return {k: sorted_keys(v[k]) for k in sorted(v)}
    if isinstance(v, list):
        return [sorted_keys(x) for x in v]
    return v


def review(op, obj_, old):
    gvr = {"group": "platform.example.com", "version": "v1alpha1", "resource": "appdeployments"}
    gvk = {"group": "platform.example.com", "version": "v1alpha1", "kind": "AppDeployment"}
    return {
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "3c1e8f2a-6b7d-4e59-a0c4-9d2f1b8e7a65",
            "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
            "name": obj_["metadata"]["name"], "namespace": obj_["metadata"]["namespace"],
            "operation": op,
            "userInfo": {"username": "system:serviceaccount:platform:platform-operator",
                         "uid": "5b0d4c1e-2f3a-4b6c-8d9e-0a1b2c3d4e5f",
                         "groups": ["system:serviceaccounts", "system:serviceaccounts:platform", "system:authenticated"]},
            "object": sorted_keys(obj_), "oldObject": sorted_keys(old), "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions" if op == "CREATE" else "UpdateOptions",
                        "fieldManager": "platform-operator"},
        },
    }


def write_json(name, doc):
    with open(os.path.join(OUT, name), "w") as f:
        f.write(json.dumps(doc, indent=1) + "\n")


write_json("review-create.json", review("CREATE", wl["object"], None))
write_json("review-update.json", review("UPDATE", wl["object"], wl["oldObject"]))
bad = copy.deepcopy(wl["object"])
bad["spec"]["replicas"] = 30  # above maxReplicas 24: replicas-in-range fails
write_json("review-create-invalid.json", review("CREATE", bad, None))
wide = copy.deepcopy(wl["object"])
ports = wide["spec"]["ports"]
more = [{"name": f"extra-{i}", "port": 20000 + i, "protocol": "TCP"} for i in range(20)]
wide["spec"]["ports"] = [p for p in ports if p["name"] != "metrics"] + more + [p for p in ports if p["name"] == "metrics"]
write_json("review-create-40-ports.json", review("CREATE", wide, None))
print(f"wrote {OUT}: object {len(json.dumps(wl['object'], separators=(',', ':')))} bytes compact")
