#!/usr/bin/env bash
# Artillery load against the local system or a deployed stack (`make load`).
#
#   loadtest/load.sh follow|seckill [TARGET]
#   STACK=my-stack loadtest/load.sh seckill            # a deployed stack: its ApiUrl and Cognito
#
# TARGET defaults to the local runner that `make dev` serves, http://127.0.0.1:3000, with
# locally minted tokens. With STACK, the stack's outputs give the target (ApiUrl, unless TARGET
# is given too) and the Cognito user pool (UserPoolId, UserPoolClientId) in which load-test
# users are created with your AWS credentials (see loadtest/artillery/lib/auth.js).
#
# Settings, all optional, from the environment: ARRIVAL_RATE, DURATION, WARMUP, P95_MS, P99_MS,
# MAX_ERROR_RATE, THINK_TIME, and per scenario those in loadtest/artillery/follow.js and
# seckill.js. The JSON report goes to loadtest/results/artillery-<scenario>.json; the summary
# is printed. Exit status non-zero when a threshold or the flash-sale check fails. With
# Cognito, every user the run created is deleted afterwards, even when the run failed.
#
# Route throttling (template.yaml's *ThrottlingRateLimit/*ThrottlingBurstLimit) answers 429
# beyond its limits, locally as in AWS. Above them, lift it: locally with
# `make dev ARGS="--route-throttling off"`; on a stack, deploy it with higher limits (docs/security.md,
# "Throttling").
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

scenario=${1:-${SCENARIO:-}}
target=${2:-${TARGET:-}}
stack=${STACK:-}
if [[ $scenario != follow && $scenario != seckill ]]; then
    echo "usage: loadtest/load.sh follow|seckill [TARGET]   (or make load SCENARIO=follow|seckill [TARGET=url] [STACK=name])" >&2
    exit 2
fi

# The outputs of a deployed stack as KEY=value lines: the aws CLI if it is installed, else
# the SAM CLI from the project's venv.
stack_outputs() {
    local json region=()
    # AWS_REGION is what the SDKs read; the CLIs want it spelled out.
    [[ -n ${AWS_REGION:-} ]] && region=(--region "$AWS_REGION")
    if aws --version >/dev/null 2>&1; then
        json=$(aws cloudformation describe-stacks --stack-name "$stack" --query 'Stacks[0].Outputs' --output json ${region[@]+"${region[@]}"}) || return 1
    else
        infra/python/ensure-venv.sh lint >/dev/null || return 1
        json=$(SAM_CLI_TELEMETRY=0 .local/venv/lint/bin/sam list stack-outputs --stack-name "$stack" --output json ${region[@]+"${region[@]}"}) || return 1
    fi
    [[ -n $json ]] || return 1
    node -e 'for (const o of JSON.parse(require("fs").readFileSync(0, "utf8")) || []) console.log(`${o.OutputKey}=${o.OutputValue}`)' <<<"$json"
}

if [[ -n $stack ]]; then
    echo "reading the outputs of stack $stack ..."
    if ! outputs=$(stack_outputs); then
        echo "could not read the outputs of stack '$stack': are your AWS credentials and region set (AWS_PROFILE, AWS_REGION)?" >&2
        exit 1
    fi
    output() { sed -n "s/^$1=//p" <<<"$outputs"; }
    target=${target:-$(output ApiUrl)}
    COGNITO_USER_POOL_ID=$(output UserPoolId)
    COGNITO_CLIENT_ID=$(output UserPoolClientId)
    if [[ -z $target || -z $COGNITO_USER_POOL_ID || -z $COGNITO_CLIENT_ID ]]; then
        echo "stack $stack lacks one of the outputs ApiUrl, UserPoolId, UserPoolClientId" >&2
        exit 1
    fi
    export COGNITO_USER_POOL_ID COGNITO_CLIENT_ID AUTH_MODE=cognito
fi

target=${target:-http://127.0.0.1:3000}
target=${target%/}
case $target in
    http://127.0.0.1:* | http://localhost:* | http://\[::1\]:*)
        export AUTH_MODE=${AUTH_MODE:-local}
        # Anything that answers HTTP will do; no answer at all means no runner.
        if [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "$target/seckill/activities/none" || true) == 000 ]]; then
            echo "nothing answers on $target: start the local system with 'make dev' in another terminal" >&2
            echo "(it serves http://127.0.0.1:3000), or pass TARGET=<url> / STACK=<stack name>" >&2
            exit 1
        fi
        ;;
    *)
        if [[ ${AUTH_MODE:-} != cognito && -z ${COGNITO_USER_POOL_ID:-} ]]; then
            echo "warning: $target is not local, but no Cognito pool is set: locally minted tokens only work" >&2
            echo "         against the local runner; pass STACK=<stack name> for a deployed stack" >&2
        fi
        ;;
esac

if [[ ${AUTH_MODE:-local} == cognito ]]; then
    # The run's Cognito users are deleted by the scenario's after hook; every username it
    # creates is also listed in this file until deleted, so that a crashed or interrupted run
    # leaves none behind either.
    users_file=$(mktemp "${TMPDIR:-/tmp}/loadtest-cognito-users.XXXXXX")
    export COGNITO_USERS_FILE=$users_file
    trap 'node loadtest/artillery/lib/cleanup.js "$users_file" || echo "some load-test users are left in the pool: see $users_file" >&2' EXIT
fi

echo "artillery $scenario against $target (tokens: ${AUTH_MODE:-local})"
loadtest/artillery/run.sh "$scenario" "$target" "loadtest/results/artillery-$scenario.json"
