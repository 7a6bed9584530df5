#!/usr/bin/env bash
# One usersvc process against two, behind nginx (docs/nginx-usersvc.conf),
# on one PostgreSQL database: wrk's requests per second for GET of one user
# and for POST, each app setting measured in alternation, three rounds.
#
#   bench/scale_out.sh [postgresql://127.0.0.1:5432/test] [seconds per run]
#
# Needs nginx and wrk (apt-get install nginx-light wrk) and the postgres
# extra; run from the repository root with its .venv. Prints a table.
set -euo pipefail
url="${1:-postgresql://127.0.0.1:5432/test}"
secs="${2:-8}"
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
schema="usersvc_bench_$$"
psql "$url" -qc "CREATE SCHEMA $schema"
pids=()
cleanup() {
    kill "${pids[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
    psql "$url" -qc "DROP SCHEMA $schema CASCADE" || true
    rm -rf "$work"
}
trap cleanup EXIT
store="$url?options=-csearch_path%3D$schema&pool_size=4"

ports=(18081 18082)
for port in "${ports[@]}"; do
    .venv/bin/python serve.py --port "$port" --threads 4 --storage "$store" \
        --trusted-proxy 127.0.0.1 >"$work/serve-$port.log" 2>&1 &
    pids+=($!)
done
sleep 2
curl -sf -o /dev/null http://127.0.0.1:18081/users -H 'Content-Type: application/json' \
     -d '{"name": "Ada", "email": "ada@example.org"}'

nginx_conf() {   # $1: how many backends
    local site
    site="$(sed -e 's/listen 80;/listen 127.0.0.1:18080;/' \
                -e 's/127.0.0.1:8081/127.0.0.1:18081/' -e 's/127.0.0.1:8082/127.0.0.1:18082/' \
                docs/nginx-usersvc.conf)"
    if [ "$1" = 1 ]; then site="$(grep -v '127.0.0.1:18082' <<<"$site")"; fi
    printf '%s\n' "$site" >"$work/site.conf"
    printf 'pid %s/nginx.pid; error_log stderr error; worker_processes 1;\nevents {}\nhttp { access_log off; include %s/site.conf; }\n' \
        "$work" "$work" >"$work/nginx.conf"
}

cat >"$work/post.lua" <<'LUA'
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"name": "U", "email": "u%d-%d@example.org"}', math.random(1e9), n)
  return wrk.format("POST", "/users", {["Content-Type"] = "application/json"}, body)
end
LUA

run() {   # $1 backends, $2 what -> requests per second
    nginx_conf "$1"
    nginx -p "$work" -c "$work/nginx.conf" -g 'daemon on;'
    sleep 0.5
    local args=(-t1 -c8 -d"${secs}s")
    if [ "$2" = post ]; then args+=(-s "$work/post.lua"); fi
    wrk "${args[@]}" http://127.0.0.1:18080/users/1 | awk '/Requests\/sec/ {print $2}'
    nginx -p "$work" -c "$work/nginx.conf" -s stop
    sleep 0.5
}

declare -A results
for round in 1 2 3; do
    for what in get post; do
        for n in 1 2; do
            results[$what-$n]+="$(run "$n" "$what") "
        done
    done
done
median() { tr ' ' '\n' | grep . | sort -n | sed -n 2p; }
printf '| behind nginx, PostgreSQL, wrk -t1 -c8 | 1 process | 2 processes | ratio |\n|---|---:|---:|---:|\n'
for what in get post; do
    one="$(median <<<"${results[$what-1]}")"; two="$(median <<<"${results[$what-2]}")"
    label=$([ "$what" = get ] && echo "GET /users/1, req/s" || echo "POST /users, req/s")
    printf '| %s | %.0f | %.0f | %.2f |\n' "$label" "$one" "$two" "$(echo "$two / $one" | bc -l)"
done
