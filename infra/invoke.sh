#!/usr/bin/env bash
# `make invoke`: sends an event file to one function of a running `make dev` through Lambda's
# Invoke API on the runner (what `aws lambda invoke --endpoint-url` calls), prints the
# function's answer, and fails, the error body printed, on a function error or a refused call.
#
#   infra/invoke.sh <logical id or function name> <event file> [base URL]
set -euo pipefail

usage="usage: make invoke FN=<logical id or function name> EVENT=events/<file>.json [URL=http://127.0.0.1:3000]"
[[ $# -ge 2 && -n $1 && -n $2 ]] || { echo "$usage" >&2; exit 2; }
function=$1 event=$2 url=${3:-http://127.0.0.1:3000}
[[ -f $event ]] || { echo "invoke: no event file $event" >&2; exit 2; }

headers=$(mktemp)
trap 'rm -f "$headers"' EXIT
# --fail-with-body: a 4xx (unknown function, payload not JSON) prints Lambda's error and fails.
status=0
curl -sS --fail-with-body -D "$headers" -w '\n' \
    -H 'Content-Type: application/json' --data-binary @"$event" \
    "${url%/}/2015-03-31/functions/$function/invocations" || status=$?
if ((status == 7)); then
    echo "invoke: nothing answers on $url: is \`make dev\` running?" >&2
fi
((status == 0)) || exit "$status"
# A function error is a 200 of the API with this header, as in Lambda.
if failure=$(grep -i '^x-amz-function-error:' "$headers"); then
    echo "invoke: $function failed (${failure%$'\r'})" >&2
    exit 1
fi
