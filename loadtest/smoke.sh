#!/usr/bin/env bash
# The load and fuzzing tools, run briefly so that they can't rot (part of `make test`):
# schemathesis against openapi.yaml, both Artillery scenarios, the benchmark harness's
# smoke mode (its report and figure), and the decoupling figure from the e2e test's series.
# Takes the URL of a running local cloud (infra/with-runner.sh gives one).
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
step "benchmark harness smoke (report and figure)" loadtest/bench.sh functions --smoke
# The decoupling figure from the series that `make test`'s run of the e2e test left (the same
# LOCAL_STATE), so that a change on either side that breaks the figure fails here.
# The plot binary is built with the workspace's bins (a no-op after `make test`'s build step):
# `cargo run -p plot` would resolve plot's features alone and compile it again.
plot() {
    cargo build -q --workspace --bins
    "${CARGO_TARGET_DIR:-target}/debug/plot" "$@"
}
series=${LOCAL_STATE:-.local/test}/decoupling/series.json
if [[ -f $series ]]; then
    step "decoupling figure" plot decoupling --series "$series" --out "${series%.json}.svg"
else
    echo "--- decoupling figure: skipped, no $series (the e2e tests have not run here)"
fi
