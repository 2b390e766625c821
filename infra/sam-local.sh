#!/usr/bin/env bash
# Usage: infra/sam-local.sh [--no-build] [--port N] [--warm LAZY|EAGER] [--run COMMAND...]
#        infra/sam-local.sh invoke FUNCTION EVENT_FILE
#
# SAM's own local loop on a real Docker engine (`make sam-local`): `sam local start-api` with
# the template's functions in Lambda containers, against the embedded emulators.
#
#  1. `sam build` for this machine's architecture (infra/sam-build.sh; --no-build takes the
#     .aws-sam/build that is there, which must be for this architecture);
#  2. a Docker engine (infra/docker/engine.sh: the running one, or the project's own from
#     Debian's docker.io) and the images (infra/docker/base-image.sh: Lambda's provided.al2023
#     base when it is there or can be pulled, else a stand-in, and it says so);
#  3. the emulators of $LOCAL_STATE (default .local/sam), the bridge that lets containers reach
#     them (infra/docker/bridge.sh), the template's tables and queues, and the env-vars file
#     ($LOCAL_STATE/sam-env.json: each function's environment, only variables the template
#     declares, with the endpoints as containers reach them);
#  4. `sam local start-api` on 127.0.0.1:PORT (default 3000) with warm containers (LAZY: each
#     function's container is started by its first request and kept), the template's
#     parameters from samconfig.toml's [default.global.parameters] plus Architecture.
#
# Prints "sam local ready on http://127.0.0.1:PORT" once it answers (--port 0: a free port).
# Without --run it serves until Ctrl-C; with --run it runs COMMAND with SAM_LOCAL_URL,
# SAM_ENV_VARS (the env-vars file) and the emulators' endpoints in its environment and exits
# with its status. Either way everything it started is stopped.
#
# `invoke FUNCTION EVENT_FILE` runs `sam local invoke` of a function (its logical id) with an
# event (e.g. events/order-consumer.json) against the same emulators, while an `up` of the
# same LOCAL_STATE runs.
#
# SAM runs no HTTP API JWT authorizer: under it the functions verify the bearer token
# themselves, as a local token (`make token`), because SAM sets AWS_SAM_LOCAL=true.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export LOCAL_STATE=${LOCAL_STATE:-.local/sam}
# shellcheck source=infra/emulators/state.sh
. "$root/infra/emulators/state.sh"
build_dir="$root/.aws-sam/build"
env_vars="$state/sam-env.json"
network=follow-seckill

die() {
    echo "sam-local: $*" >&2
    exit 1
}

case $(uname -m) in
x86_64) arch=x86_64 ;;
aarch64) arch=arm64 ;;
*) die "no Lambda architecture for $(uname -m)" ;;
esac

# The template's parameters as samconfig.toml's default environment gives them to every
# command, with the architecture of this machine's build.
parameter_overrides() {
    infra/sam-parameters.sh default "$arch"
}

# What `sam` needs in its environment: the engine, credentials and region for the
# containers (moto takes any), no telemetry. The endpoints reach the functions through the
# env-vars file only: SAM's own boto calls must not go to the emulator.
use_engine() {
    DOCKER_HOST=$(sed -n 's/^DOCKER_HOST=//p' "$state/docker/engine.env")
    export DOCKER_HOST
}

sam_env() {
    local name value
    use_engine
    while IFS='=' read -r name value; do
        case $name in
        AWS_REGION | AWS_DEFAULT_REGION | AWS_ACCESS_KEY_ID | AWS_SECRET_ACCESS_KEY) export "$name=$value" ;;
        esac
    done <"$state/emulators.env"
    export SAM_CLI_TELEMETRY=0
    unset AWS_ENDPOINT_URL REDIS_URL AWS_PROFILE
    export PATH="$root/.local/venv/sam/bin:$PATH"
}

if [[ ${1:-} == invoke ]]; then
    [[ $# -eq 3 ]] || die "usage: infra/sam-local.sh invoke FUNCTION EVENT_FILE"
    [[ -f $3 ]] || die "no event file $3"
    [[ -f $env_vars && -f $state/docker/engine.env && -f $state/emulators.env ]] ||
        die "nothing runs for $state_show: start it first (make sam-local)"
    sam_env
    exec sam local invoke "$2" --event "$3" --template "$build_dir/template.yaml" \
        --env-vars "$env_vars" --docker-network "$network" --skip-pull-image \
        --parameter-overrides "$(parameter_overrides)"
fi

build=1
port=3000
warm=LAZY
run=()
while [[ $# -gt 0 ]]; do
    case $1 in
    --no-build) build=0 ;;
    --port) port=${2:?--port needs a number}; shift ;;
    --warm) warm=${2:?--warm needs LAZY or EAGER}; shift ;;
    --run) shift; run=("$@"); break ;;
    *) die "unknown option $1 (usage: infra/sam-local.sh [--no-build] [--port N] [--warm LAZY|EAGER] [--run COMMAND...])" ;;
    esac
    shift
done
[[ $port =~ ^[0-9]+$ ]] || die "--port must be a number, got '$port'"
if [[ $port == 0 ]]; then
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fi
[[ $warm == LAZY || $warm == EAGER ]] || die "--warm must be LAZY or EAGER, got '$warm'"

started=$SECONDS
if ((build)); then
    infra/sam-build.sh "$arch"
fi
[[ -f $build_dir/template.yaml ]] || die "no .aws-sam/build: run make sam-build ARCH=$arch first"
built_for=$(cat "$build_dir/architecture" 2>/dev/null || echo unknown)
[[ $built_for == "$arch" ]] ||
    die ".aws-sam/build is for $built_for, this machine runs $arch: make sam-build ARCH=$arch"
bash infra/python/ensure-venv.sh sam

sam_pid=""
tail_pid=""
started_emulators=0
started_engine=0
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    [[ -z $tail_pid ]] || kill "$tail_pid" 2>/dev/null || true
    if [[ -n $sam_pid ]] && kill -0 "$sam_pid" 2>/dev/null; then
        # SIGINT lets SAM stop its warm containers itself.
        kill -INT "$sam_pid" 2>/dev/null || true
        for _ in $(seq 300); do kill -0 "$sam_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$sam_pid" 2>/dev/null || true
        wait "$sam_pid" 2>/dev/null || true
        echo "stopped sam local (pid $sam_pid)"
    fi
    if ((started_engine)) && [[ -f $state/docker/engine.env ]]; then
        (use_engine && docker ps -aq --filter label=sam.cli.container.type=lambda |
            xargs -r docker rm -f >/dev/null 2>&1) || true
    fi
    infra/docker/bridge.sh stop >/dev/null 2>&1 || true
    if ((started_emulators)); then
        infra/emulators/stop.sh || true
    elif ((started_engine)); then
        infra/docker/engine.sh stop || true
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[[ -f $state/emulators.env ]] || started_emulators=1
[[ -f $state/docker/engine.env ]] || started_engine=1
infra/docker/engine.sh start
use_engine
infra/docker/base-image.sh --lambda
infra/emulators/start.sh
infra/docker/bridge.sh start
sam_env

# The tables and queues, and the env-vars file, with the same parameters as SAM.
parameters=()
for pair in $(parameter_overrides); do
    [[ $pair == Architecture=* ]] || parameters+=(--parameter "$pair")
done
rm -f "$env_vars"
(
    set -a
    # shellcheck disable=SC1091
    . "$state/emulators.env"
    # The containers reach the same redis-server through the bridge: the same password.
    redis_auth=${REDIS_URL#redis://}
    [[ $redis_auth == *@* ]] && redis_auth=${redis_auth%%@*}@ || redis_auth=""
    exec target/debug/local-cloud provision "${parameters[@]}" --sam-env-vars "$env_vars" \
        --container-endpoint http://emulators:4566 \
        --container-redis-url "redis://${redis_auth}emulators:6379"
) || die "provisioning the template's tables and queues failed"

mkdir -p "$state/logs"
log="$state/logs/sam.log"
: >"$log"
# A background job starts with SIGINT ignored, and Python then never turns it into the
# KeyboardInterrupt on which SAM stops its warm containers: env gives it back.
setsid env --default-signal=INT sam local start-api --template "$build_dir/template.yaml" --env-vars "$env_vars" \
    --docker-network "$network" --skip-pull-image --warm-containers "$warm" \
    --host 127.0.0.1 --port "$port" --parameter-overrides "$(parameter_overrides)" \
    </dev/null >>"$log" 2>&1 &
sam_pid=$!
deadline=$((SECONDS + 180))
# Any HTTP answer (API Gateway's 403 for a path without a route) means it serves.
until python3 - "$port" <<'PY' 2>/dev/null; do
import sys, urllib.request, urllib.error
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    opener.open(f"http://127.0.0.1:{sys.argv[1]}/", timeout=2)
except urllib.error.HTTPError:
    pass
PY
    kill -0 "$sam_pid" 2>/dev/null || { tail -n 30 "$log" >&2; die "sam local start-api exited"; }
    ((SECONDS < deadline)) || { tail -n 30 "$log" >&2; die "sam local start-api did not answer within 180 s"; }
    sleep 0.5
done
echo "sam local ready on http://127.0.0.1:$port ($(grep -c '^Mounting .* at http' "$log") routes," \
    "warm containers $warm, $((SECONDS - started)) s; its log: $state_show/logs/sam.log)"

if [[ ${#run[@]} -eq 0 ]]; then
    echo "Ctrl-C stops sam local, the bridge, the emulators and the engine it started"
    tail -n +1 -f "$log" &
    tail_pid=$!
    wait "$sam_pid"
    die "sam local start-api exited; see $state_show/logs/sam.log"
fi

(
    set -a
    # shellcheck disable=SC1091
    . "$state/emulators.env"
    set +a
    export SAM_LOCAL_URL="http://127.0.0.1:$port" SAM_ENV_VARS=$env_vars DOCKER_HOST
    exec "${run[@]}"
)
