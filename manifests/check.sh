#!/usr/bin/env bash
# Builds every kustomize overlay and validates the output against the
# Kubernetes schemas (kubernetes-validate, offline: it ships the schemas),
# and checks the alert expressions with promtool. Run by .ci/run; exits
# non-zero on the first failure. Tools it cannot find are skipped with a
# loud message, never silently.
#   CELHOOK_BIN=target/debug/celhook manifests/check.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

loud() { printf '\n!!! %s\n\n' "$*" >&2; }

if ! command -v kubectl >/dev/null 2>&1; then
    # Debian's kubernetes-client is kubectl 1.20, whose kustomize (v2)
    # lacks components and replacements: no use here.
    loud "kubectl not found: manifests NOT built or validated (install kubectl 1.27 or newer)"
    exit 0
fi

out="$(mktemp -d)"
trap 'rm -rf "${out}"' EXIT

# The dev overlay takes its certificate from certs/out/.
if [ ! -f certs/out/ca.crt ]; then
    CELHOOK_BIN="${CELHOOK_BIN:-}" certs/generate.sh >/dev/null
fi

overlays=(base overlays/dev overlays/cert-manager overlays/monitoring)
for overlay in "${overlays[@]}"; do
    name="${overlay//\//-}"
    echo "kubectl kustomize manifests/${overlay}"
    kubectl kustomize "manifests/${overlay}" >"${out}/${name}.yaml"
done

# The image the dev overlay deploys is the one the README and the
# Dockerfile say to build.
dev_image="$(awk '/newName:/{n=$2} /newTag:/{t=$2} END{print n ":" t}' manifests/overlays/dev/kustomization.yaml)"
for doc in README.md Dockerfile; do
    grep -q "docker build -t ${dev_image} \." "${doc}" \
        || { echo "${doc}: no 'docker build -t ${dev_image} .' (the dev overlay's image)" >&2; exit 1; }
done
grep -q "image: .*${dev_image}" "${out}/overlays-dev.yaml" || { echo "dev overlay: image is not ${dev_image}" >&2; exit 1; }

# What the API server insists on, beyond the schemas.
grep -q 'caBundle' "${out}/overlays-dev.yaml" || { echo "dev overlay: no caBundle" >&2; exit 1; }
grep -q 'cert-manager.io/inject-ca-from: celhook/celhook-serving' "${out}/overlays-cert-manager.yaml" \
    || { echo "cert-manager overlay: no CA injection" >&2; exit 1; }

if command -v kubernetes-validate >/dev/null 2>&1; then
    for version in 1.30.0 1.37.0; do
        for overlay in "${overlays[@]}"; do
            name="${overlay//\//-}"
            echo "kubernetes-validate -k ${version} --strict manifests/${overlay}"
            # Warnings are the cert-manager and Prometheus Operator kinds,
            # which have no schema in Kubernetes itself.
            kubernetes-validate -k "${version}" --strict --quiet --no-warn "${out}/${name}.yaml"
        done
    done
    echo "note: Issuer, Certificate, ServiceMonitor and PrometheusRule are custom kinds: built, not schema-checked"
else
    loud "kubernetes-validate not found: manifests built but NOT schema-validated (pip install kubernetes-validate)"
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
    loud "promtool or python3 not found: alert rules NOT checked"
fi
echo "manifests: ok"
