#!/usr/bin/env bash
# Runs a command against a local cloud of the project's template: starts
# `target/debug/local-cloud up` on a free loopback port (the emulators' endpoints must already
# be in the environment, e.g. under infra/run-with-emulators.sh), waits until it is ready,
# runs the command with the API's URL as its last argument and in LOCAL_CLOUD_URL, and stops
# the runner by its PID, whatever the command's outcome.
#
#   LOCAL_STATE=.local/test infra/run-with-emulators.sh infra/with-runner.sh loadtest/smoke.sh
#
# The runner enforces the template's route throttling, as API Gateway does; the smoke stays
# far below it. A command that needs more sets LOCAL_CLOUD_ROUTE_THROTTLING=off.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
[[ $# -ge 1 ]] || { echo "usage: infra/with-runner.sh COMMAND [ARGS...]" >&2; exit 2; }
: "${AWS_ENDPOINT_URL:?start the emulators first (infra/run-with-emulators.sh does)}"

state=${LOCAL_STATE:-.local/test}
mkdir -p "$state"
log="$state/with-runner.log"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
target/debug/local-cloud up --template template.yaml --binaries-dir target/debug --quiet \
    --address "127.0.0.1:$port" --stack-name "smoke$$" >"$log" 2>&1 &
runner=$!
# shellcheck source=infra/background.sh
. infra/background.sh
trap 'stop_pid INT "$runner"' EXIT
wait_ready "$log" "ready on" "$runner" 60 "the local cloud" || exit 1
export LOCAL_CLOUD_URL="http://127.0.0.1:$port"
echo "local cloud up on $LOCAL_CLOUD_URL (log: $log)"
"$@" "$LOCAL_CLOUD_URL"
