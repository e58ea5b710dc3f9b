#!/usr/bin/env bash
# Runs the fuzz targets, each for a bounded time, and fails on the first
# crash. Usage: fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]
#   fuzz/run.sh 30            # every target, 30 s each (what CI runs)
#   fuzz/run.sh 600 cel_eval  # one target, 10 minutes
# New inputs that add coverage land in fuzz/corpus/<target>/; a crash is
# saved in fuzz/artifacts/<target>/ and the run stops. Crashes become
# regression tests by moving them to fuzz/regressions/<target>/ (see
# fuzz/README.md).
#
# The sanitizer is off: celhook forbids unsafe code, so AddressSanitizer
# would find nothing Rust does not already check, and without it the
# targets build on the stable toolchain and run several times faster.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

seconds="${1:-30}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(admission_review conversion_review config_load cel_compile cel_eval conversion json)
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is missing: cargo install cargo-fuzz --locked" >&2
    exit 1
fi

for target in "${targets[@]}"; do cargo fuzz build --sanitizer none "${target}"; done
for target in "${targets[@]}"; do
    dict=()
    case "${target}" in
        admission_review | conversion_review | config_load | json) dict=(-dict=dicts/json.dict) ;;
        cel_compile) dict=(-dict=dicts/cel.dict) ;;
    esac
    echo "==> ${target}: ${seconds} s"
    # -timeout: one input may take at most 10 s (a rule or conversion that
    # runs longer is a bug: cost limits must stop it far sooner).
    # -rss_limit_mb: memory must stay bounded whatever the input.
    # -max_len: reviews and configs need room; rules stay short.
    cargo fuzz run --sanitizer none "${target}" -- \
        -max_total_time="${seconds}" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
        -print_final_stats=1 "${dict[@]}" 2>&1 |
        grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|Done|SUMMARY)|panicked|ERROR' || true
    if [ -n "$(ls -A "artifacts/${target}" 2>/dev/null)" ]; then
        echo "${target}: crash saved in fuzz/artifacts/${target}/" >&2
        exit 1
    fi
done
