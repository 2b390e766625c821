#!/usr/bin/env bash
# The benchmark harness's entry point. Sections (more will join: decoupling, storm, hot keys):
#
#   loadtest/bench.sh functions [--smoke | --no-build | --sam-build] [bench options]
#
# `functions`: docs/DESIGN.md §6 "cold start" and "per-request overhead" for every function, by
# `loadtest/bench` against `aws-stub` (instant canned DynamoDB and SQS answers) and a real
# redis-server: part 1, each binary's init time beside a hello-world lambda_runtime binary,
# its stripped size and peak memory; part 2, each HTTP function's throughput through the
# local runner beside a hello-world lambda_http function, and where its CPU per request goes:
# hello-http's, its AWS calls at the SDK's per-call cost (measured in the same run by
# `sdk-floor`, beside the floor under the SDK: hyper + SigV4), and its own; part 3, every
# binary of part 1 under the CPU share Lambda gives each memory size (a cgroup per process with a CFS quota of
# size / 1769 MB vCPU; --memory-sizes, default 128,256,512,1024,1769): init, warm duration
# p50 / p90 / mean over sequential invocations, cost per million requests at Lambda's arm64
# prices and the size with the lowest cost (the fastest p90 within 10% of it) beside the
# template's MemorySize. Part 3 needs a writable cgroup cpu controller (root; cgroup v1 cpu or
# v2): without one it fails with the reason; --skip-memory-sizes leaves it out. Builds the
# release binaries (`cargo build --release --workspace --bins`) and writes
# loadtest/results/functions.md, with functions.svg beside it (every cold start; each route's
# latency distribution, p50 / p90 / p99 and throughput share of hello-http's) and
# functions-memory.svg (part 3: warm p50 and cost per million by memory size), both linked from
# the report.
#
# --no-build: measure the release binaries already in target/release (a release build of
# every function is long); the report's command line says so.
# Part 1 starts after `sync` and once the 1-minute load average is at most 0.5, waiting at
# most 5 min (--settle-load, --settle-max-s; the report says what it found): right after a
# release build, cold starts read up to a third slower.
# --sam-build: measure the bootstraps that `make sam-build` left in .aws-sam/build (this machine's
# architecture), i.e. what is deployed; the baselines and the harness are built the same way
# (`cargo lambda build --release`) and everything is linked into target/sam-build/.
# --smoke: a tiny bounded run (debug binaries, 1 cold start, 50 requests per function; part 3
# at 128 and 1769 MB for the baselines, get-user and notification-consumer only, 5
# invocations each) written to .local/bench-fn/smoke/, for
# `make test`: it proves the harness still runs and that every function still takes its
# happy path against the stub; its figures mean nothing.
#
# Ports 3920-3929 on 127.0.0.1: stub 3920, runners 3921/3922, Runtime API 3923, part 3's late
# stub 3924, moto 3928 and redis 3929 (LOCAL_STATE .local/bench-fn). Everything started here is stopped by PID.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export LOCAL_STATE=.local/bench-fn
stub_port=${BENCH_STUB_PORT:-3920}

usage() {
    echo "usage: loadtest/bench.sh functions [--smoke | --no-build | --sam-build] [bench options]" >&2
    echo "       loadtest/bench.sh profile FUNCTION... [--invocations N]" >&2
    exit 2
}

if [[ ${1:-} == --with-emulators ]]; then
    # Second stage: redis (and moto, unused) are up; REDIS_URL is exported.
    shift
    profile=$1
    shift
    work=$1
    shift
    mkdir -p "$work"
    "target/$profile/aws-stub" --address "127.0.0.1:$stub_port" >"$work/stub.log" 2>&1 &
    stub=$!
    # shellcheck source=infra/background.sh
    . infra/background.sh
    trap 'stop_pid TERM "$stub"' EXIT
    wait_ready "$work/stub.log" "listening" "$stub" 5 "aws-stub" || exit 1
    # The functions and the runners get the stub, never the emulator.
    unset "${!AWS_ENDPOINT_URL@}"
    "target/$profile/bench" --binaries-dir "target/$profile" \
        --stub-url "http://127.0.0.1:$stub_port" --stub-pid "$stub" --redis-url "$REDIS_URL" \
        --work-dir "$work" "$@"
    exit 0
fi

if [[ ${1:-} == profile ]]; then
    # `profile FUNCTION... [--invocations N]`: where a warm invocation's CPU goes, per owner
    # (the SDK, logging, metrics, our code, lambda_http, lambda_runtime, tokio, the kernel).
    # Builds the `profiling` profile (release code with symbols) of the binaries, the
    # baselines and the harness; part 1 (one cold start) and part 3 at 1769 MB only, against the
    # instant stub, with `perf record` (DWARF stacks) on each process's measured invocations;
    # then `perf-attribution` writes loadtest/results/functions-profile.md. Needs perf
    # (Debian's linux-perf) and root (part 3's cgroups; perf attaching to a process).
    shift
    binaries=()
    invocations=5000
    while [[ $# -gt 0 ]]; do
        case $1 in
        --invocations) invocations=$2; shift 2 ;;
        -*) usage ;;
        *) binaries+=("$1"); shift ;;
        esac
    done
    [[ ${#binaries[@]} -gt 0 ]] || usage
    command -v perf >/dev/null || { echo "perf is missing: apt-get install linux-perf" >&2; exit 1; }
    packages=(-p bench -p aws-stub -p local-cloud-fixtures)
    only=()
    for binary in "${binaries[@]}"; do
        # The baselines (hello-runtime, hello-http) always run and are recorded too.
        [[ -d functions/$binary ]] || { echo "no function $binary in functions/" >&2; exit 2; }
        packages+=(-p "$binary")
        only+=(--only "$binary" --memory-only "$binary")
    done
    echo "building the profiling profile of ${binaries[*]} and the harness ..."
    cargo build --profile profiling "${packages[@]}"
    work=.local/bench-profile
    rm -rf "$work"
    mkdir -p "$work/perf"
    export MOTO_PORT=${BENCH_MOTO_PORT:-3928} REDIS_PORT=${BENCH_REDIS_PORT:-3929}
    infra/run-with-emulators.sh "$0" --with-emulators profiling "$work" \
        --skip-throughput --runs 1 --invocations 10 --settle-max-s 0 --memory-sizes 1769 --memory-runs 1 \
        --memory-warmup 500 --memory-invocations "$invocations" --memory-aws-latency-ms 0 \
        --perf-dir "$work/perf" "${only[@]}" --out "$work/functions.md"
    out=loadtest/results/functions-profile.md
    {
        echo "# Functions: where a warm invocation's CPU goes"
        echo
        echo "Generated by \`loadtest/bench.sh profile ${binaries[*]} --invocations $invocations\` ($(date -u '+%Y-%m-%d %H:%M') UTC; machine: \`nproc\` = $(nproc))."
        echo
        echo "Each binary (the \`profiling\` profile: the release profile's code, symbols kept) serves 500 unmeasured, then $invocations measured invocations back to back, one process at 1769 MB's CPU share (one vCPU) on the harness's Runtime API, every AWS call answered at once by \`aws-stub\` (part 3 of \`loadtest/bench.sh functions\`), then $invocations more under \`perf record -F 1999 --call-graph dwarf\` (after the measured ones: perf's stack copies cost the process CPU); \`perf-attribution\` (\`loadtest/bench/src/bin/perf-attribution.rs\`) charges each sample to the first owner found walking its stack from the leaf up, so logging counts as logging whoever opened the span, and hyper's connection tasks as the SDK's or the runtime client's by the body they carry. Cells: µs of CPU per warm invocation (part 3's CPU time per invocation × the owner's share of samples), share in brackets."
        echo
        target/profiling/perf-attribution --results "$work/functions.json" --perf-dir "$work/perf"
    } >"$out"
    echo "written to $out"
    exit 0
fi

[[ ${1:-} == functions ]] || usage
shift
mode=full
case ${1:-} in
--smoke)
    mode=smoke
    shift
    ;;
--no-build)
    mode=no-build
    shift
    ;;
--sam-build)
    mode=sam-build
    shift
    ;;
esac

export MOTO_PORT=${BENCH_MOTO_PORT:-3928} REDIS_PORT=${BENCH_REDIS_PORT:-3929}
if [[ $mode == smoke ]]; then
    # `make test` has built the debug binaries already; this is a no-op then.
    cargo build -q --workspace --bins
    work=.local/bench-fn/smoke
    infra/run-with-emulators.sh "$0" --with-emulators debug "$work" \
        --runs 1 --invocations 2 --settle-max-s 0 --instances 1 --concurrency 2 --requests 50 --warmup 5 \
        --duration 5 --sdk-rounds 1 --sdk-calls 100 --sdk-warmup 10 \
        --memory-sizes 128,1769 --memory-runs 1 --memory-warmup 2 \
        --memory-invocations 5 --memory-only get-user --memory-only notification-consumer \
        --out "$work/functions.md" --command "loadtest/bench.sh functions --smoke" \
        --fail-off-happy-path "$@"
    echo "bench smoke: ok ($work/functions.md)"
elif [[ $mode == sam-build ]]; then
    [[ -f .aws-sam/build/template.yaml ]] || { echo "nothing in .aws-sam/build: run make sam-build first" >&2; exit 1; }
    bash infra/python/ensure-venv.sh sam
    # The same cargo-lambda, profile and flags as the functions' own build.
    PATH="$root/.local/venv/sam/bin:$PATH" cargo lambda build --release -p bench -p aws-stub \
        -p local-cloud-fixtures --bin bench --bin sdk-floor --bin aws-stub --bin hello-runtime \
        --bin hello-http
    dir=target/sam-build
    rm -rf "$dir"
    mkdir -p "$dir"
    for binary in bench sdk-floor aws-stub hello-runtime hello-http; do
        ln -s "$root/target/lambda/$binary/bootstrap" "$dir/$binary"
    done
    # Each function's bootstrap under its Handler's name, for part 1, and under its bundle's
    # Binary name, for the runner of part 2 (infra/sam-functions.sh reads template.yaml).
    while read -r logical_id binary handler; do
        ln -s "$root/.aws-sam/build/$logical_id/bootstrap" "$dir/$handler"
        ln -sfn "$root/.aws-sam/build/$logical_id/bootstrap" "$dir/$binary"
    done < <(infra/sam-functions.sh)
    notes=()
    [[ -f loadtest/bench/analysis.md ]] && notes=(--notes loadtest/bench/analysis.md)
    command="loadtest/bench.sh functions --sam-build${*:+ $*}"
    infra/run-with-emulators.sh "$0" --with-emulators sam-build .local/bench-fn "${notes[@]}" \
        --command "$command" "$@"
else
    if [[ $mode == full ]]; then
        echo "building release binaries (cargo build --release --workspace --bins) ..."
        cargo build --release --workspace --bins
    fi
    notes=()
    # The hand-written analysis of the last run's bounds, appended to the report.
    [[ -f loadtest/bench/analysis.md ]] && notes=(--notes loadtest/bench/analysis.md)
    command="loadtest/bench.sh functions"
    [[ $mode == no-build ]] && command+=" --no-build"
    infra/run-with-emulators.sh "$0" --with-emulators release .local/bench-fn "${notes[@]}" \
        --command "$command${*:+ $*}" "$@"
fi
