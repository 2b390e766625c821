#!/usr/bin/env bash
# The load and fuzzing tools, run briefly so that they can't rot (part of `make test`):
# schemathesis against openapi.yaml, both Artillery scenarios, and the benchmark harness's
# smoke mode. Takes the URL of a running local cloud (infra/with-runner.sh gives one).
#
#   loadtest/smoke.sh http://127.0.0.1:PORT
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
url=${1:?usage: loadtest/smoke.sh http://127.0.0.1:PORT}

step() {
    local name=$1
    shift
    local started=$SECONDS
    echo "--- $name"
    "$@"
    echo "--- $name: ok in $((SECONDS - started)) s"
}
step "schemathesis against openapi.yaml" infra/schemathesis.sh "$url"
step "Artillery smoke (follow, seckill)" loadtest/smoke-load.sh "$url"
step "benchmark harness smoke" loadtest/bench.sh functions --smoke
