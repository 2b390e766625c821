#!/usr/bin/env bash
# Usage: infra/docker/engine.sh start|stop
#
# The Docker engine of the SAM loop (`make sam-local`, and its step in `make test`).
#
# start: uses the engine that already answers (DOCKER_HOST, or the system's socket) and
#   otherwise starts one of the project's own from Debian's docker.io package (installed on
#   first use; needs root): `dockerd --iptables=false --storage-driver=vfs`, its images and
#   containers under $LOCAL_STATE/docker/data, its socket and runtime state in a short folder
#   under /tmp (socket paths are limited to 108 bytes). Writes $LOCAL_STATE/docker/engine.env
#   (DOCKER_HOST=...) for the other scripts. Running it again while it runs changes nothing.
# stop: stops the engine this script started for LOCAL_STATE (its containers with it), by the
#   PID it recorded; an engine it did not start is left alone. infra/emulators/stop.sh calls it,
#   so whatever stops the emulators stops the engine too.
#
# Environment: LOCAL_STATE (default .local/dev), as for infra/emulators/start.sh.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=infra/emulators/state.sh
. "$root/infra/emulators/state.sh"
# shellcheck source=infra/emulators/processes.sh
. "$root/infra/emulators/processes.sh"

dir="$state/docker"
env_file="$dir/engine.env"
pidfile="$dir/dockerd.pid"
data_root="$dir/data"
# One short runtime folder per state folder: the same state always gets the same one.
run_dir="/tmp/follow-seckill-docker.$(printf '%s' "$state" | cksum | cut -d' ' -f1)"
socket="$run_dir/docker.sock"
startup_timeout=60

die() {
    echo "engine.sh: $*" >&2
    exit 1
}

answers() { # DOCKER_HOST
    DOCKER_HOST=$1 timeout 10 docker info >/dev/null 2>&1
}

start() {
    mkdir -p "$dir" "$state/logs"
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$dir/.start.lock"
        flock 9
    fi
    local pid
    pid=$(cat "$pidfile" 2>/dev/null || true)
    if is_ours "$pid" "$data_root" && answers "unix://$socket"; then
        echo "docker engine already running (pid $pid)"
        return
    fi
    rm -f "$pidfile"
    # An engine the user runs is theirs to keep: used, never stopped here.
    local external=${DOCKER_HOST:-}
    if [[ -z $external && -S /var/run/docker.sock ]]; then
        external=unix:///var/run/docker.sock
    fi
    if [[ -n $external ]] && command -v docker >/dev/null 2>&1 && answers "$external"; then
        echo "DOCKER_HOST=$external" >"$env_file"
        echo "using the running docker engine at $external"
        return
    fi

    [[ $(id -u) -eq 0 ]] ||
        die "no docker engine answers, and starting the project's own needs root (Debian's" \
            "docker.io runs as root): run this as root, or start Docker and set DOCKER_HOST"
    if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
        command -v apt-get >/dev/null 2>&1 ||
            die "dockerd not found; install Docker, start it, and set DOCKER_HOST"
        # shellcheck source=infra/apt-install.sh
        . "$root/infra/apt-install.sh"
        apt_install docker.io || die "apt-get install docker.io failed"
    fi

    mkdir -p "$data_root" "$run_dir"
    local log="$state/logs/dockerd.log"
    { printf '=== %s: dockerd\n' "$(date '+%Y-%m-%d %H:%M:%S')"; } >>"$log"
    # No iptables: the engine must not touch the machine's firewall. Containers still reach
    # each other on a Docker network, and the userland proxy publishes their ports on
    # 127.0.0.1. vfs works on any file system (no overlay mounts needed).
    setsid nohup dockerd --iptables=false --ip-masq=false --storage-driver=vfs \
        --data-root "$data_root" --exec-root "$run_dir/exec" \
        --pidfile "$run_dir/dockerd.pid" -H "unix://$socket" \
        </dev/null >>"$log" 2>&1 9>&- &
    pid=$!
    echo "$pid" >"$pidfile"
    local deadline=$((SECONDS + startup_timeout))
    until answers "unix://$socket"; do
        if ! is_ours "$pid" "$data_root"; then
            echo "engine.sh: dockerd exited during startup; its log ($state_show/logs/dockerd.log) ends:" >&2
            tail -n 20 "$log" >&2
            rm -f "$pidfile"
            exit 1
        fi
        if ((SECONDS >= deadline)); then
            echo "engine.sh: dockerd did not answer within ${startup_timeout} s; its log ends:" >&2
            tail -n 20 "$log" >&2
            stop >&2
            exit 1
        fi
        sleep 0.5
    done
    echo "DOCKER_HOST=unix://$socket" >"$env_file"
    echo "started the docker engine (pid $pid, $(DOCKER_HOST="unix://$socket" docker version -f '{{.Server.Version}}' 2>/dev/null)), state in $state_show/docker"
}

stop() {
    local pid i
    pid=$(cat "$pidfile" 2>/dev/null || true)
    rm -f "$env_file"
    [[ -n $pid ]] || return 0
    if is_ours "$pid" "$data_root"; then
        # Containers first, while the engine can still stop them cleanly.
        DOCKER_HOST="unix://$socket" timeout 30 docker ps -aq 2>/dev/null |
            xargs -r env DOCKER_HOST="unix://$socket" timeout 60 docker rm -f >/dev/null 2>&1 || true
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < 200; i++)); do
            is_ours "$pid" "$data_root" || break
            sleep 0.1
        done
        if is_ours "$pid" "$data_root"; then
            echo "dockerd (pid $pid) ignored TERM for 20 s; sending KILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
        echo "stopped the docker engine (pid $pid)"
    fi
    rm -f "$pidfile"
}

case ${1:-} in
start) start ;;
stop) stop ;;
*)
    echo "usage: infra/docker/engine.sh start|stop" >&2
    exit 2
    ;;
esac
