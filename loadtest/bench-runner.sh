#!/usr/bin/env bash
# Measures what the local cloud runner adds to a request: a hello-world lambda_http function
# (the fixture HelloFunction) behind the runner's HTTP API, driven by loadgen (a Rust
# closed-loop generator; one Artillery process saturates near 1,000 requests/s).
#
#   loadtest/bench-runner.sh [requests]      # writes loadtest/results/local-runner.md
#
# Latency is measured at concurrency 1, where the p50 is the runner's added latency plus the
# function's own few microseconds; throughput at 32 connections with 4 instances.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
requests=${1:-100000}
[[ ${1:-} == --with-emulators ]] && requests=${2:-100000}
port=${BENCH_PORT:-3901}
out=loadtest/results/local-runner.md

if [[ ${1:-} == --with-emulators ]]; then
    # Second stage: the emulators are up and their endpoints exported.
    requests=$2
    log=.local/bench/runner.log
    target/release/local-cloud up --template infra/local-cloud/fixtures/template.yaml \
        --binaries-dir target/release --address "127.0.0.1:$port" --instances 4 --quiet \
        --route-throttling off --stack-name "bench$$" >"$log" 2>&1 &
    runner=$!
    trap 'kill -INT $runner 2>/dev/null; wait $runner 2>/dev/null' EXIT
    for _ in $(seq 1 150); do
        grep -q "ready on" "$log" && break
        kill -0 $runner 2>/dev/null || { cat "$log"; exit 1; }
        sleep 0.2
    done
    url="http://127.0.0.1:$port/hello"
    echo "latency: $(target/release/loadgen "$url" --concurrency 1 --requests 5000 --warmup 500)"
    echo "throughput: $(target/release/loadgen "$url" --concurrency 32 --requests "$requests" --duration 30 --warmup 1000)"
    exit 0
fi

echo "building release binaries ..."
cargo build --release -q -p local-cloud -p local-cloud-fixtures -p loadgen
mkdir -p .local/bench
LOCAL_STATE=.local/bench infra/run-with-emulators.sh "$0" --with-emulators "$requests" | tee .local/bench/result.txt

latency=$(sed -n 's/^latency: *//p' .local/bench/result.txt)
throughput=$(sed -n 's/^throughput: *//p' .local/bench/result.txt)
cat >"$out" <<MD
# Local cloud runner: added latency and throughput

Hello-world \`lambda_http\` function (fixture \`hello-http\`, release build) behind the local
cloud runner's HTTP API (route \`GET /hello\`, no authorizer), 4 instances, invocation log off.
Machine: $(nproc) cores; the runner, the function instances and the load generator share them.

Command: \`loadtest/bench-runner.sh $requests\` (run $(date -u +%Y-%m-%d))

| measure | loadgen | result |
|---|---|---|
| added latency (concurrency 1) | \`loadgen http://127.0.0.1:$port/hello --concurrency 1 --requests 5000 --warmup 500\` | $latency |
| throughput (32 connections) | \`loadgen http://127.0.0.1:$port/hello --concurrency 32 --requests $requests --duration 30 --warmup 1000\` | $throughput |

Targets (issue: local cloud runner): p50 added latency under 1 ms; at least 5,000 requests/s.
MD
echo "written to $out"
