#!/usr/bin/env bash
# A bounded Artillery smoke of both scenarios against a local runner that is already up
# (make test starts one; this script starts nothing): a few seconds of each at small rates,
# every virtual user must succeed and the flash sale must sell exactly its stock. Reports and
# Artillery's output go to .local/artillery-smoke/. Then, with the emulators' AWS_ENDPOINT_URL,
# the Cognito mode's user lifecycle against moto (loadtest/artillery/test-cognito-users.js).
# Well under a minute once the node packages are installed (the first run installs them).
#
#   loadtest/smoke-load.sh http://127.0.0.1:PORT      (or SMOKE_TARGET=... loadtest/smoke-load.sh)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

target=${1:-${SMOKE_TARGET:-}}
if [[ -z $target ]]; then
    echo "usage: loadtest/smoke-load.sh http://127.0.0.1:PORT   (a local runner that is up)" >&2
    exit 2
fi
target=${target%/}
out=.local/artillery-smoke
mkdir -p "$out"

loadtest/artillery/run.sh --install-only

if [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "$target/seckill/activities/none" || true) == 000 ]]; then
    echo "nothing answers on $target: the smoke needs a running local runner" >&2
    exit 1
fi

# Local tokens whatever the caller's environment says; loose latency bounds (debug builds on
# a busy CI machine), but no failed virtual user at all.
export AUTH_MODE=local THINK_TIME=0 WARMUP=0 P95_MS=${SMOKE_P95_MS:-3000} P99_MS=${SMOKE_P99_MS:-5000} MAX_ERROR_RATE=0
unset COGNITO_USER_POOL_ID COGNITO_CLIENT_ID

start=$SECONDS
status=0
ARRIVAL_RATE=2 DURATION=5 POSTERS=3 FOLLOWS_PER_USER=2 \
    loadtest/artillery/run.sh follow "$target" "$out/artillery-follow.json" "$out/artillery-follow.log" || status=1
ARRIVAL_RATE=10 DURATION=4 SECKILL_STOCK=10 SECKILL_BUYERS=30 VERIFY_TIMEOUT=20 \
    loadtest/artillery/run.sh seckill "$target" "$out/artillery-seckill.json" "$out/artillery-seckill.log" || status=1

# The Cognito mode's user lifecycle (lib/auth.js) against moto's cognito-idp, whose endpoint
# the emulators export: one admin with TOTP, everyone deleted afterwards.
if [[ -n ${AWS_ENDPOINT_URL:-} ]]; then
    node loadtest/artillery/test-cognito-users.js >"$out/cognito-users.log" 2>&1 || status=1
    # Without the SDK's notice that Node.js 20 will be unsupported one day.
    grep -v -e NodeVersionSupportWarning -e 'node >=22' -e 'a.co/' -e 'trace-warnings' -e 'continue receiving' \
        -e 'security updates' -e 'versions published' -e '^$' "$out/cognito-users.log" || true
else
    echo "cognito users: skipped (no AWS_ENDPOINT_URL: run under infra/run-with-emulators.sh)"
fi

echo "artillery smoke: $( ((status == 0)) && echo ok || echo FAILED ) in $((SECONDS - start)) s (reports in $out)"
exit "$status"
