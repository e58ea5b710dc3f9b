# Shell functions for scripts that run `celhook serve` and measure it
# (bench-ratios.sh, server-ab.sh): sourced, not run.

# The port a server started with `--listen 127.0.0.1:0 --log-format json`
# listens on, read from its "listening" log line in LOG once it appears;
# fails when process PID ends first or nothing shows within 20 s.
celhook_port() {
  local log=$1 pid=$2 port=""
  for _ in $(seq 1 100); do
    port=$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    try:
        addr = json.loads(line).get("local_addr")
    except ValueError:
        continue
    if addr:
        print(addr.rsplit(":", 1)[1])
        break
' "$log")
    [[ -n $port ]] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  [[ -n $port ]] || return 1
  echo "$port"
}

# The admission reviews the server on PORT has answered (its request
# histogram's count, warm-ups included), scraped from /metrics.
celhook_answered() {
  python3 - "$1" <<'PY'
import ssl, sys, urllib.request
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
text = urllib.request.urlopen(f"https://127.0.0.1:{sys.argv[1]}/metrics", context=ctx, timeout=30).read().decode()
print(int(sum(float(l.split()[-1]) for l in text.splitlines()
              if l.startswith("celhook_request_duration_seconds_count") and 'handler="validate"' in l)))
PY
}
