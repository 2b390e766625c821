#!/usr/bin/env bash
# Stops the local emulators that infra/emulators/start.sh started for one state directory.
#
# Environment: LOCAL_STATE  state directory, relative to the repository root unless
#                           absolute (default .local/dev), the same as start.sh's.
# Only the PIDs recorded there are signalled, and only while their command line is still
# the emulator we started: a PID recycled by an unrelated process is left alone.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=infra/emulators/state.sh
. "$here/state.sh"

# shellcheck source=infra/emulators/processes.sh
. "$here/processes.sh"

stopped_any=0

stop_one() { # NAME PATTERN
    local name=$1 pattern=$2 pidfile="$state/$1.pid" pid i
    [[ -f $pidfile ]] || return 0
    pid=$(<"$pidfile")
    if ! is_ours "$pid" "$pattern"; then
        if [[ -n $(cmdline_of "$pid") ]]; then
            echo "$name was not running (pid $pid now belongs to another program; left alone)"
        else
            echo "$name was not running (pid ${pid:-?} already gone)"
        fi
        rm -f "$pidfile"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        is_ours "$pid" "$pattern" || break
        sleep 0.1
    done
    if is_ours "$pid" "$pattern"; then
        echo "$name (pid $pid) ignored TERM for 5 s; sending KILL"
        kill -KILL "$pid" 2>/dev/null || true
        for ((i = 0; i < 20; i++)); do
            is_ours "$pid" "$pattern" || break
            sleep 0.1
        done
    fi
    rm -f "$pidfile"
    echo "stopped $name (pid $pid)"
    stopped_any=1
}

# The SAM loop's emulator bridge and Docker engine, where this state folder has them
# (infra/sam-local.sh): stopped with the emulators they serve.
if [[ -f $state/bridge.pid || -f $state/docker/engine.env ]]; then
    LOCAL_STATE=$state "$root/infra/docker/bridge.sh" stop || true
fi
if [[ -f $state/docker/dockerd.pid ]]; then
    LOCAL_STATE=$state "$root/infra/docker/engine.sh" stop || true
    stopped_any=1
fi
stop_one moto moto_server.py
stop_one redis redis-server
rm -f "$state/emulators.env" "$state/redis.conf"

if [[ $stopped_any -eq 0 ]]; then
    echo "no emulators running for $state_show"
fi
