#!/usr/bin/env bash
# Runs a command with the local emulators up and their endpoints in its environment, then
# stops the emulators it started, whatever the command's outcome.
#
#   LOCAL_STATE=.local/test infra/run-with-emulators.sh cargo nextest run --workspace
#
# Emulators that were already running in that state directory are used and left running.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
export LOCAL_STATE=${LOCAL_STATE:-.local/test}
state=$LOCAL_STATE
[[ $state == /* ]] || state="$root/$state"

alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
started_here=true
if [[ -f $state/emulators.env ]] && alive "$state/moto.pid" && alive "$state/redis.pid"; then
    started_here=false
fi
stop_ours() {
    if $started_here; then
        "$here/emulators/stop.sh" || true
    fi
}
trap stop_ours EXIT

"$here/emulators/start.sh"

# The browser tests (the live dashboard's) need Debian's chromium and chromedriver, installed
# on first use. Without them only those tests fail, and they say why.
"$here/browser.sh" || echo "run-with-emulators.sh: no chromium; the browser tests will fail" >&2

# The endpoints become the environment of the command, exactly as a function would get them.
while IFS='=' read -r name value; do
    [[ -n $name && $name != \#* ]] && export "$name=$value"
done <"$state/emulators.env"

"$@"
