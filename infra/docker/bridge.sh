#!/usr/bin/env bash
# Usage: infra/docker/bridge.sh start|stop
#
# How `sam local`'s function containers reach the emulators of $LOCAL_STATE, which listen on
# the host's loopback only (and nothing of the project listens anywhere else):
#
#   function container ──tcp──▶ emulators:4566 / emulators:6379   (a container on the Docker
#                                 │                                network follow-seckill)
#                                 └─unix socket (bind-mounted)─▶ host: local-cloud forward
#                                                                 ──tcp──▶ 127.0.0.1:<moto/redis>
#
# Both halves are `local-cloud forward` (infra/local-cloud/src/forward.rs): on the host, a
# process that turns two socket files into the emulators' ports; in the container
# `follow-seckill-emulators` (image follow-seckill/local-base, network alias `emulators`),
# the same binary turning them back into ports 4566 and 6379. So the functions' endpoints are
# http://emulators:4566 and redis://:PASSWORD@emulators:6379 on the network `follow-seckill`
# (the bridge carries bytes: the password is the emulators' own, in emulators.env).
#
# start needs the emulators (emulators.env) and the engine (docker/engine.env) of LOCAL_STATE,
# and checks the way through from a container before it returns. stop undoes it.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=infra/emulators/state.sh
. "$root/infra/emulators/state.sh"
# shellcheck source=infra/emulators/processes.sh
. "$root/infra/emulators/processes.sh"

network=follow-seckill
container=follow-seckill-emulators
image=follow-seckill/local-base:latest
pidfile="$state/bridge.pid"
sockets="/tmp/follow-seckill-bridge.$(printf '%s' "$state" | cksum | cut -d' ' -f1)"
binary="$root/target/debug/local-cloud"

die() {
    echo "bridge.sh: $*" >&2
    exit 1
}

env_value() { # FILE KEY
    sed -n "s/^$2=//p" "$1" 2>/dev/null | head -n 1
}

engine() {
    local host
    host=$(env_value "$state/docker/engine.env" DOCKER_HOST)
    [[ -n $host ]] || die "no docker engine for $state_show (infra/docker/engine.sh start)"
    export DOCKER_HOST=$host
}

stop() {
    local pid
    if [[ -f $state/docker/engine.env ]]; then
        engine
        docker rm -f "$container" >/dev/null 2>&1 || true
    fi
    pid=$(cat "$pidfile" 2>/dev/null || true)
    if is_ours "$pid" "forward unix:$sockets/"; then
        kill -TERM "$pid" 2>/dev/null || true
        echo "stopped the emulator bridge (pid $pid)"
    fi
    rm -f "$pidfile"
    rm -rf "$sockets"
}

start() {
    local moto redis pid
    moto=$(env_value "$state/emulators.env" AWS_ENDPOINT_URL)
    redis=$(env_value "$state/emulators.env" REDIS_URL)
    [[ -n $moto && -n $redis ]] || die "no emulators for $state_show (infra/emulators/start.sh)"
    engine
    # The binary runs in the container too, on the local base's copy of this machine's glibc.
    (cd "$root" && cargo build -q -p local-cloud) || die "cargo build -p local-cloud failed"
    stop >/dev/null
    mkdir -p "$sockets" "$state/logs"

    setsid nohup "$binary" forward \
        "unix:$sockets/aws.sock=tcp:${moto#http://}" \
        "unix:$sockets/redis.sock=tcp:${redis##*@}" \
        </dev/null >>"$state/logs/bridge.log" 2>&1 9>&- &
    pid=$!
    echo "$pid" >"$pidfile"
    for _ in $(seq 50); do
        [[ -S $sockets/aws.sock && -S $sockets/redis.sock ]] && break
        kill -0 "$pid" 2>/dev/null || die "the host half exited; see $state_show/logs/bridge.log"
        sleep 0.1
    done

    docker network inspect "$network" >/dev/null 2>&1 ||
        docker network create --label follow-seckill "$network" >/dev/null
    docker run -d --name "$container" --label follow-seckill=bridge \
        --network "$network" --network-alias emulators \
        -v "$sockets:/sockets" -v "$binary:/bridge/local-cloud:ro" \
        "$image" /bridge/local-cloud forward \
        tcp:0.0.0.0:4566=unix:/sockets/aws.sock tcp:0.0.0.0:6379=unix:/sockets/redis.sock \
        >/dev/null
    # The way a function will go: by name, from another container on the network (the
    # container's half may take a moment to listen). `timeout`, not `wget -T`: busybox 1.35's
    # wget crashes on -T.
    if ! docker run --rm --network "$network" "$image" sh -c '
        for i in $(seq 50); do
            timeout 5 wget -q -O /dev/null http://emulators:4566/moto-api/config && exit 0
            sleep 0.2
        done
        exit 1'; then
        docker logs "$container" >&2 || true
        die "a container on $network cannot reach moto through http://emulators:4566"
    fi
    echo "emulators reachable from containers on the network $network as" \
        "http://emulators:4566 and redis://emulators:6379 (bridge pid $pid)"
}

case ${1:-} in
start) start ;;
stop) stop ;;
*)
    echo "usage: infra/docker/bridge.sh start|stop" >&2
    exit 2
    ;;
esac
