#!/usr/bin/env bash
# Development certificates for celhook in namespace $1 (default: celhook):
# a CA and a serving certificate for celhook.<ns>.svc and
# celhook.<ns>.svc.cluster.local, written to certs/out/; prints the caBundle
# (base64 of ca.crt) on stdout. manifests/overlays/dev picks the files up.
# Uses `celhook certs` (rcgen), so no openssl is needed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
namespace="${1:-celhook}"
if [ -n "${CELHOOK_BIN:-}" ]; then
    exec "${CELHOOK_BIN}" certs --out-dir certs/out --namespace "${namespace}"
fi
exec cargo run --quiet --locked -p celhook -- certs --out-dir certs/out --namespace "${namespace}"
