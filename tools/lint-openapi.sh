#!/usr/bin/env bash
# Lint the OpenAPI document usersvc serves, in open and in token mode,
# with examples/tasks.py's tasks (every kind of field), and with the
# webhooks feature plugged (its paths and the top-level `webhooks`), with
# two linters nobody here wrote, at the versions pinned in tools/package.json
# (and package-lock.json): Redocly CLI with its `recommended` rules and
# Spectral with `spectral:oas`. Any error or warning from either fails.
# Then a TypeScript client made from the tasks document by openapi-typescript
# (tools/typescript/send.ts, on openapi-fetch) is compiled with `tsc --strict`
# and run against examples/tasks.py: it sends `field[op]` parameters, typed.
#   tools/lint-openapi.sh        (needs Node.js and npm, and the project's .venv)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || { echo "lint-openapi: make the .venv first (see README)" >&2; exit 2; }
(cd tools && npm ci --no-audit --no-fund --loglevel=error)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
.venv/bin/python tools/openapi_documents.py "$out"
status=0
for mode in open tokens tasks webhooks; do
    document="$out/openapi-$mode.json"
    echo "== $mode mode"
    (cd tools && npx --no-install redocly --version | sed 's/^/redocly /')
    (cd tools && npx --no-install redocly lint --extends=recommended --format=json "$document" \
        > "$out/redocly-$mode.json" 2> "$out/redocly-$mode.log") || true
    if ! .venv/bin/python - "$out/redocly-$mode.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
totals = report["totals"]
for problem in report["problems"]:
    print(f"  redocly {problem['severity']} {problem['ruleId']}: {problem['message']}")
print(f"redocly: {totals['errors']} errors, {totals['warnings']} warnings")
sys.exit(1 if totals["errors"] or totals["warnings"] else 0)
PY
    then status=1; fi
    (cd tools && npx --no-install spectral --version | sed 's/^/spectral /')
    if (cd tools && npx --no-install spectral lint --ruleset .spectral.yaml --fail-severity=hint \
            --format=text "$document"); then
        echo "spectral: 0 problems"
    else
        status=1
    fi
done

echo "== typescript client"
ts="$out/ts"
mkdir "$ts"
cp tools/typescript/send.ts tools/typescript/tsconfig.json "$ts/"
echo '{"type": "module"}' > "$ts/package.json"
ln -s "$PWD/tools/node_modules" "$ts/node_modules"
(cd tools && npx --no-install openapi-typescript "$out/openapi-tasks.json" -o "$ts/tasks.d.ts" --silent)
if (cd "$ts" && ./node_modules/.bin/tsc -p .); then
    port=$(.venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    .venv/bin/python examples/tasks.py --port "$port" --storage memory:// --no-access-log \
        > "$out/server.log" 2>&1 &
    server=$!
    for _ in $(seq 50); do
        .venv/bin/python -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" \
            2>/dev/null && break
        sleep 0.2
    done
    node "$ts/dist/send.js" "http://127.0.0.1:$port" || status=1
    kill "$server"; wait "$server" 2>/dev/null || true
else
    echo "typescript client: tsc refused it"
    status=1
fi
exit $status
