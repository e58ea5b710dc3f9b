#!/usr/bin/env bash
# Builds every kustomize overlay and validates the output against the
# Kubernetes schemas (kubernetes-validate, offline: it ships the schemas),
# and checks the alert expressions with promtool; checks that the example
# webhook configuration is what `celhook webhook-config` writes, and runs
# the README's deployment sequence ("Deploying your own CRDs") with
# `kubectl kustomize` in place of `kubectl apply -k`. Run by .ci/run; exits
# non-zero on the first failure. A tool it cannot find fails the run under
# CI=true, and is skipped with a loud message elsewhere.
#   CELHOOK_BIN=target/debug/celhook manifests/check.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

loud() { printf '\n!!! %s\n\n' "$*" >&2; }
# A missing tool: an error in CI, where .ci/run installs what it can.
missing() {
    loud "$*"
    if [ "${CI:-}" = true ]; then
        exit 1
    fi
}

if ! command -v kubectl >/dev/null 2>&1; then
    # Debian's kubernetes-client is kubectl 1.20, whose kustomize (v2)
    # lacks components and replacements: no use here.
    missing "kubectl not found: manifests NOT built or validated (install kubectl 1.27 or newer)"
    exit 0
fi
celhook_bin="${CELHOOK_BIN:-}"
if [ -z "${celhook_bin}" ]; then
    cargo build --quiet --locked -p celhook
    celhook_bin="${CARGO_TARGET_DIR:-target}/debug/celhook"
fi
celhook_bin="$(cd "$(dirname "${celhook_bin}")" && pwd)/$(basename "${celhook_bin}")"

out="$(mktemp -d)"
trap 'rm -rf "${out}"' EXIT

# The dev overlay takes its certificate from certs/out/.
if [ ! -f certs/out/ca.crt ]; then
    CELHOOK_BIN="${celhook_bin}" certs/generate.sh >/dev/null
fi

# The example webhook configuration is what the command writes today.
"${celhook_bin}" webhook-config --config manifests/examples/crontab.yaml >"${out}/webhook.yaml"
diff -u manifests/webhook/webhook.yaml "${out}/webhook.yaml" \
    || { echo "manifests/webhook/webhook.yaml is stale: write it again with celhook webhook-config (see its kustomization.yaml)" >&2; exit 1; }

overlays=(base overlays/dev overlays/cert-manager overlays/monitoring overlays/production)
for overlay in "${overlays[@]}"; do
    name="${overlay//\//-}"
    echo "kubectl kustomize manifests/${overlay}"
    kubectl kustomize "manifests/${overlay}" >"${out}/${name}.yaml"
done

# The README's deployment sequence, in a scratch directory beside a link to
# manifests/: `celhook` from this build, the kustomization built, not applied.
deploy="${out}/deploy-path"
mkdir -p "${deploy}/bin"
ln -s "$(pwd)/manifests" "${deploy}/manifests"
ln -s "${celhook_bin}" "${deploy}/bin/celhook"
awk '/<!-- deploy-path: begin -->/{on=1; next} /<!-- deploy-path: end -->/{on=0} on' README.md \
    | grep -v '^```' \
    | sed -e 's/^cargo install --path \. --locked.*$/command -v celhook/' \
          -e 's/^kubectl apply -k deploy$/kubectl kustomize deploy >deploy.out.yaml/' \
    >"${deploy}/steps.sh"
grep -q 'kubectl kustomize deploy' "${deploy}/steps.sh" \
    || { echo "README: no deploy-path block ending in kubectl apply -k deploy" >&2; exit 1; }
echo "README deployment sequence (${deploy}/steps.sh)"
(cd "${deploy}" && PATH="${deploy}/bin:${PATH}" bash -euo pipefail steps.sh)
cp "${deploy}/deploy.out.yaml" "${out}/deploy-path.yaml"
python3 - "${out}/deploy-path.yaml" <<'PY'
import sys, yaml
docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
vwc = docs[("ValidatingWebhookConfiguration", "celhook")]
assert vwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == "celhook/celhook-serving", vwc
rules = vwc["webhooks"][0]["rules"]
assert [r["apiGroups"] for r in rules] == [["restaurant.programming-kubernetes.info"]], rules
crd = docs[("CustomResourceDefinition", "pizzas.restaurant.programming-kubernetes.info")]
assert crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["namespace"] == "celhook", crd["spec"]["conversion"]
assert crd["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == "celhook/celhook-serving"
assert list(docs[("ConfigMap", "celhook-config")]["data"]) == ["pizza-conversion.yaml"]
assert docs[("Deployment", "celhook")]["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example.com/celhook:0.1.0"
print("deploy path: webhook, conversion CRD, CA injection, ConfigMap and image as documented")
PY
overlays+=(deploy-path)

# The image the dev overlay deploys is the one the README and the
# Dockerfile say to build.
dev_image="$(awk '/newName:/{n=$2} /newTag:/{t=$2} END{print n ":" t}' manifests/overlays/dev/kustomization.yaml)"
for doc in README.md Dockerfile; do
    grep -q "docker build -t ${dev_image} \." "${doc}" \
        || { echo "${doc}: no 'docker build -t ${dev_image} .' (the dev overlay's image)" >&2; exit 1; }
done
grep -q "image: .*${dev_image}" "${out}/overlays-dev.yaml" || { echo "dev overlay: image is not ${dev_image}" >&2; exit 1; }

# What the API server insists on, beyond the schemas: the dev CA reaches the
# webhook configuration, and cert-manager is asked to inject it.
grep -q 'caBundle' "${out}/overlays-dev.yaml" || { echo "dev overlay: no caBundle" >&2; exit 1; }
grep -q 'cert-manager.io/inject-ca-from: celhook/celhook-serving' "${out}/overlays-cert-manager.yaml" \
    || { echo "cert-manager overlay: no CA injection" >&2; exit 1; }
# Scale-out: the base runs at its PriorityClass; production adds the
# autoscaler and the NetworkPolicy, and leaves the replica count to the
# autoscaler.
grep -q 'priorityClassName: celhook-critical' "${out}/base.yaml" \
    || { echo "base: no priorityClassName" >&2; exit 1; }
python3 - "${out}/overlays-production.yaml" <<'PY'
import sys, yaml
docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
assert ("HorizontalPodAutoscaler", "celhook") in docs, "production: no HorizontalPodAutoscaler"
assert ("NetworkPolicy", "celhook") in docs, "production: no NetworkPolicy"
deployment = docs[("Deployment", "celhook")]
assert "replicas" not in deployment["spec"], "production: the Deployment still sets replicas"
assert deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "250m"
print("production overlay: autoscaler, NetworkPolicy, replicas left to the autoscaler")
PY

if command -v kubernetes-validate >/dev/null 2>&1; then
    for version in 1.30.0 1.37.0; do
        for overlay in "${overlays[@]}"; do
            name="${overlay//\//-}"
            echo "kubernetes-validate -k ${version} --strict ${overlay}"
            # Warnings are the cert-manager and Prometheus Operator kinds,
            # which have no schema in Kubernetes itself.
            kubernetes-validate -k "${version}" --strict --quiet --no-warn "${out}/${name}.yaml"
        done
    done
    echo "note: Issuer, Certificate, ServiceMonitor and PrometheusRule are custom kinds: built, not schema-checked"
else
    missing "kubernetes-validate not found: manifests built but NOT schema-validated (pip install kubernetes-validate)"
fi

if command -v promtool >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1; then
    python3 - "${out}/overlays-monitoring.yaml" >"${out}/rules.yaml" <<'PY'
import sys, yaml
for doc in yaml.safe_load_all(open(sys.argv[1])):
    if doc and doc.get("kind") == "PrometheusRule":
        yaml.safe_dump(doc["spec"], sys.stdout)
PY
    echo "promtool check rules (PrometheusRule celhook)"
    promtool check rules "${out}/rules.yaml"
else
    missing "promtool or python3 not found: alert rules NOT checked"
fi
echo "manifests: ok"
