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
#
# Distributed, for a deployed stack at the seed's rate (one machine cannot drive 4,000 order
# attempts a second; docs/capacity.md has the arithmetic and the costs):
#
#   DISTRIBUTED=fargate STACK=my-stack [RATE=4000] [COUNT=20] [REGION=us-east-1] \
#       [CPU=4] [MEMORY=8] [DURATION=60] [WARMUP=10] [DRY_RUN=1] loadtest/load.sh seckill
#
# runs `artillery run-fargate`: COUNT load-generator containers on AWS Fargate in REGION, each
# with CPU vCPUs and MEMORY GB, each arriving RATE/COUNT buyers a second (each buyer makes one
# order attempt), for WARMUP + DURATION seconds. Each worker runs the scenario's before and
# after hooks itself: its own sale of SECKILL_STOCK units and its own check. The workers need
# Cognito's admin calls on the stack's pool (docs/capacity.md, "Driving the load"). DRY_RUN=1
# prints the command and the estimated cost and runs nothing (no AWS call, no install).
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

# Its arguments as one line a shell reads back as the same words.
shell_words() {
    local arg words=()
    for arg; do
        if [[ $arg =~ ^[A-Za-z0-9_./:,=+@%-]+$ ]]; then
            words+=("$arg")
        else
            words+=("'${arg//\'/\'\\\'\'}'")
        fi
    done
    echo "${words[*]}"
}

# `artillery run-fargate` of SCENARIO against TARGET (DISTRIBUTED=fargate, above): the
# command, its estimated cost, and unless DRY_RUN the run itself.
distributed_run() {
    local scenario=$1 target=$2
    local count=${COUNT:-20} rate=${RATE:-4000} region=${REGION:-${AWS_REGION:-us-east-1}}
    local cpu=${CPU:-4} memory=${MEMORY:-8} duration=${DURATION:-60} warmup=${WARMUP:-10}
    local number
    for number in count rate cpu memory duration warmup; do
        if [[ ! ${!number} =~ ^[0-9]+$ ]] || ((${!number} == 0 && number != warmup)); then
            echo "${number^^} must be a whole number above 0, not '${!number}'" >&2
            exit 2
        fi
    done
    if [[ -z $target ]]; then
        echo "the distributed mode drives a deployed stack: pass STACK=<stack name> (or TARGET=https://...)" >&2
        exit 2
    fi
    case $target in
        http://127.0.0.1:* | http://localhost:* | http://\[::1\]:*)
            echo "the workers run in AWS and cannot reach $target: pass STACK=<stack name>" >&2
            exit 2
            ;;
    esac
    if [[ ${AUTH_MODE:-} != cognito ]]; then
        echo "the distributed mode needs the stack's Cognito pool for its users: pass STACK=<stack name>" >&2
        exit 2
    fi
    # Each worker arrives its share of the buyers; together at least RATE a second.
    local per_worker=$(((rate + count - 1) / count))
    local max_duration=$((warmup + duration + 600))
    # What the workers' scenario reads (seckill.js, lib/auth.js): the pool, and whatever of the
    # scenario's settings is set here.
    local environment name
    environment=$(
        for name in AUTH_MODE COGNITO_USER_POOL_ID COGNITO_CLIENT_ID SECKILL_STOCK SECKILL_BUYERS \
            SECKILL_PER_USER_LIMIT SECKILL_MAX_QUANTITY SECKILL_ONLINE_SHARE VERIFY_TIMEOUT THINK_TIME; do
            [[ -n ${!name:-} ]] && printf '%s\t%s\n' "$name" "${!name}"
        done
        printf '%s\t%s\n' AWS_REGION "$region"
    )
    local launch_config
    launch_config=$(node -e '
        const environment = require("fs").readFileSync(0, "utf8").split("\n").filter(Boolean)
            .map((line) => { const [name, ...value] = line.split("\t"); return { name, value: value.join("\t") }; });
        console.log(JSON.stringify({ environment }));' <<<"$environment")
    local report=loadtest/results/artillery-$scenario-fargate.json
    local overrides
    if [[ -d loadtest/artillery/node_modules/js-yaml ]]; then
        overrides=$(cd loadtest/artillery && ARRIVAL_RATE=$per_worker DURATION=$duration WARMUP=$warmup node overrides.js "$scenario.yml")
    else
        # Not installed yet (a dry run installs nothing): printed as the command that makes it.
        overrides=@OVERRIDES@
    fi
    local cmd=(node_modules/.bin/artillery run-fargate --region "$region" --count "$count"
        --cpu "$cpu" --memory "$memory" --max-duration "$max_duration"
        --tags "service:follow-seckill,scenario:$scenario" --launch-config "$launch_config"
        --target "$target" --overrides "$overrides" --output "../../$report" "$scenario.yml")

    echo "artillery $scenario on AWS Fargate: $count workers in $region, $per_worker buyers/s each ($((per_worker * count))/s together), ${warmup} s warm-up + ${duration} s"
    echo "command (in loadtest/artillery):"
    local printed
    printed=$(shell_words "${cmd[@]}")
    echo "  ${printed//@OVERRIDES@/\"\$(ARRIVAL_RATE=$per_worker DURATION=$duration WARMUP=$warmup node overrides.js $scenario.yml)\"}"
    # us-east-1 list prices (Fargate Linux/x86: per vCPU-hour and per GB-hour, billed per
    # second with a one-minute minimum); the workers start and stop within a few minutes of
    # the run. The stack's own costs at the rate are in docs/capacity.md.
    local minutes=$(((warmup + duration + 180 + 59) / 60))
    node -e '
        const [count, cpu, memory, minutes, rate, seconds] = process.argv.slice(1).map(Number);
        const fargate = count * (cpu * 0.04048 + memory * 0.004445) * minutes / 60;
        const attempts = rate * seconds;
        // Per buyer: a detail read, an order attempt and at most a few more calls.
        const api = attempts * 3 * 1.0 / 1e6;       // HTTP API, $1.00 per million
        const lambda = attempts * 3 * 0.20 / 1e6;   // Lambda requests, $0.20 per million
        console.log(`estimated cost: Fargate workers $${fargate.toFixed(2)} (${count} x ${cpu} vCPU, ${memory} GB, ~${minutes} min);`
            + ` the stack, about ${attempts.toLocaleString("en-US")} buyers: HTTP API ~$${api.toFixed(2)} + Lambda requests ~$${lambda.toFixed(2)}`
            + ` + Lambda duration, DynamoDB, SQS, CloudFront (docs/capacity.md)`);
    ' "$count" "$cpu" "$memory" "$minutes" "$rate" "$((warmup + duration))"
    if [[ -n $dry_run ]]; then
        echo "DRY_RUN: nothing was run"
        return 0
    fi
    loadtest/artillery/run.sh --install-only
    (cd loadtest/artillery && ARTILLERY_DISABLE_TELEMETRY=true "${cmd[@]}")
}

distributed=${DISTRIBUTED:-}
dry_run=${DRY_RUN:-}
if [[ -n $distributed && $distributed != fargate ]]; then
    echo "DISTRIBUTED=$distributed: the distributed mode is 'fargate' (artillery run-fargate)" >&2
    exit 2
fi
if [[ -n $dry_run && -z $distributed ]]; then
    echo "DRY_RUN applies to the distributed mode (DISTRIBUTED=fargate)" >&2
    exit 2
fi

if [[ -n $stack && -n $dry_run ]]; then
    # Nothing is read from AWS in a dry run: the outputs stand as placeholders.
    target=${target:-"<ApiUrl of stack $stack>"}
    COGNITO_USER_POOL_ID="<UserPoolId of stack $stack>"
    COGNITO_CLIENT_ID="<UserPoolClientId of stack $stack>"
    export COGNITO_USER_POOL_ID COGNITO_CLIENT_ID AUTH_MODE=cognito
elif [[ -n $stack ]]; then
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

if [[ -n $distributed ]]; then
    distributed_run "$scenario" "${target%/}"
    exit
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
