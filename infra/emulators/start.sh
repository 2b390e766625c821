#!/usr/bin/env bash
# Starts the local emulators, without Docker: moto's server (DynamoDB, DynamoDB Streams,
# SQS, on one port) and redis-server, both on loopback, installing them when missing.
# They keep running after this script; infra/emulators/stop.sh stops them.
#
# Environment:
#   LOCAL_STATE  state directory, relative to the repository root unless absolute
#                (default .local/dev). Each directory holds its own pair of emulators,
#                so tests (.local/test) never touch a developer's running ones.
#   MOTO_PORT, REDIS_PORT  fixed ports; by default free loopback ports are picked.
#   PYTHON       interpreter for the moto venv and the helpers here (default python3).
#   DYNAMODB_CONFLICTS  on (default) or off: whether moto's DynamoDB models AWS's
#                transaction conflicts (infra/emulators/moto_server.py); off is for load
#                tests that want the emulator's raw throughput. Applies when the pair
#                starts: a running pair keeps its setting, with a warning if it differs.
#
# Writes to the state directory: moto.pid, redis.pid, logs/moto.log, logs/redis.log,
# redis.conf (the password redis-server requires, as ElastiCache requires its AUTH token; a
# new one for each start, readable by its owner only) and, once both answer, emulators.env:
# plain KEY=value lines (AWS_ENDPOINT_URL, AWS_REGION, AWS_DEFAULT_REGION, AWS_ACCESS_KEY_ID,
# AWS_SECRET_ACCESS_KEY, REDIS_URL with the password, redis://:PASSWORD@127.0.0.1:PORT, and
# DYNAMODB_CONFLICTS as information) that make, a shell and a Rust test can all read.
# Running it again while they run changes nothing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=infra/emulators/state.sh
. "$here/state.sh"
env_file="$state/emulators.env"
python=${PYTHON:-python3}
moto_python="$root/.local/venv/moto/bin/python"
startup_timeout=30
conflicts=${DYNAMODB_CONFLICTS:-on}

die() {
    echo "start.sh: $*" >&2
    exit 1
}

command -v "$python" >/dev/null 2>&1 || die "$python not found; install Python 3 (>= 3.10) or set PYTHON"
[[ $conflicts == on || $conflicts == off ]] || die "DYNAMODB_CONFLICTS must be on or off, got '$conflicts'"

# --- probes ------------------------------------------------------------------------

# shellcheck source=infra/emulators/processes.sh
. "$here/processes.sh"

# curl and redis-cli may be missing on a fresh machine; python3 is there anyway.
# The proxy handler is emptied so an HTTP_PROXY in the environment cannot intercept.
moto_answers() { # PORT
    "$python" - "$1" <<'EOF' >/dev/null 2>&1
import sys, urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
opener.open(f"http://127.0.0.1:{sys.argv[1]}/moto-api/config", timeout=2).read()
EOF
}

# The password goes through the environment: a command line is visible to every user.
redis_answers() { # PORT (and $redis_password)
    REDIS_PASSWORD=$redis_password "$python" - "$1" <<'EOF' >/dev/null 2>&1
import os, socket, sys
password = os.environ["REDIS_PASSWORD"].encode()
with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2) as s:
    s.sendall(b"*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n*1\r\n$4\r\nPING\r\n" % (len(password), password))
    answer = b""
    while answer.count(b"\r\n") < 2:
        chunk = s.recv(64)
        if not chunk:
            break
        answer += chunk
    sys.exit(0 if answer == b"+OK\r\n+PONG\r\n" else 1)
EOF
}

# Prints on or off as the running moto reports it (GET /_local/conflicts), nothing if it
# does not say.
moto_conflicts() { # PORT
    "$python" - "$1" <<'EOF' 2>/dev/null || true
import json, sys, urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
answer = opener.open(f"http://127.0.0.1:{sys.argv[1]}/_local/conflicts", timeout=2).read()
print("on" if json.loads(answer)["enabled"] else "off")
EOF
}

env_value() { # KEY -> value recorded in emulators.env
    sed -n "s/^$1=//p" "$env_file" 2>/dev/null | head -n 1
}

summary() { # MOTO_PORT MOTO_PID REDIS_PORT REDIS_PID
    printf 'moto     http://127.0.0.1:%s  (pid %s)\n' "$1" "$2"
    printf 'redis    redis://127.0.0.1:%s  (pid %s)\n' "$3" "$4"
}

mkdir -p "$state/logs"

# Two starts for the same state directory at once would race for the pid files.
if command -v flock >/dev/null 2>&1; then
    exec 9>"$state/.start.lock"
    flock 9
fi

# --- already running? --------------------------------------------------------------

if [[ -f $env_file || -f $state/moto.pid || -f $state/redis.pid ]]; then
    moto_pid=$(cat "$state/moto.pid" 2>/dev/null || true)
    redis_pid=$(cat "$state/redis.pid" 2>/dev/null || true)
    moto_port=$(env_value AWS_ENDPOINT_URL)
    moto_port=${moto_port##*:}
    redis_url=$(env_value REDIS_URL)
    redis_port=${redis_url##*:}
    redis_password=${redis_url#redis://:}
    redis_password=${redis_password%%@*}
    # Live processes get a grace period to answer: a moto busy with a load test must not
    # be mistaken for a hung one and restarted under a developer's feet.
    pair_answers() {
        local deadline=$((SECONDS + 10))
        until moto_answers "$moto_port" && redis_answers "$redis_port"; do
            ((SECONDS < deadline)) || return 1
            sleep 0.5
        done
    }
    if [[ -f $env_file ]] &&
        is_ours "$moto_pid" moto_server.py && is_ours "$redis_pid" redis-server && pair_answers; then
        echo "emulators already running"
        running_conflicts=$(moto_conflicts "$moto_port")
        if [[ $running_conflicts != "$conflicts" ]]; then
            echo "start.sh: warning: the running moto has DynamoDB conflicts" \
                "'${running_conflicts:-unknown}', not '$conflicts' (DYNAMODB_CONFLICTS);" \
                "stop it (LOCAL_STATE=$state_show infra/emulators/stop.sh) to change that" >&2
        fi
        summary "$moto_port" "$moto_pid" "$redis_port" "$redis_pid"
        echo "endpoints in $state_show/emulators.env"
        exit 0
    fi
    # A half-dead pair (one crashed, or a start interrupted) is replaced as a whole.
    echo "cleaning up stale emulator state in $state_show" >&2
    LOCAL_STATE=$state "$here/stop.sh" >&2
fi

# --- install what is missing -------------------------------------------------------

PYTHON=$python "$root/infra/python/ensure-venv.sh" moto

if ! command -v redis-server >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 ||
        die "redis-server not found; install Redis (e.g. 'brew install redis' or 'dnf install redis')"
    # shellcheck source=infra/apt-install.sh
    . "$root/infra/apt-install.sh"
    apt_install redis-server || die "apt-get install redis-server failed"
    command -v redis-server >/dev/null 2>&1 || die "redis-server still not on PATH after apt-get install"
fi

# --- ports -------------------------------------------------------------------------

for var in MOTO_PORT REDIS_PORT; do
    if [[ -n ${!var:-} && ! ${!var} =~ ^[0-9]+$ ]]; then
        die "$var must be a port number, got '${!var}'"
    fi
done
# Both sockets are held open together so the two picks cannot coincide.
read -r free1 free2 < <("$python" -c '
import socket
a, b = socket.socket(), socket.socket()
a.bind(("127.0.0.1", 0)); b.bind(("127.0.0.1", 0))
print(a.getsockname()[1], b.getsockname()[1])') || true
[[ -n ${free2:-} ]] || die "could not pick free loopback ports"
moto_port=${MOTO_PORT:-$free1}
redis_port=${REDIS_PORT:-$free2}
[[ $moto_port != "$redis_port" ]] || die "MOTO_PORT and REDIS_PORT are both $moto_port"
# A taken port must fail here: the readiness probe would otherwise get its answer from
# whatever already listens there (another state directory's Redis, say).
for port in "$moto_port" "$redis_port"; do
    "$python" - "$port" <<'EOF' 2>/dev/null || die "port $port on 127.0.0.1 is already in use"
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers do: ignore TIME_WAIT
s.bind(("127.0.0.1", int(sys.argv[1])))
EOF
done

# --- start -------------------------------------------------------------------------

moto_pid=""
redis_pid=""
started=0
cleanup() {
    if [[ $started -eq 0 && ( -n $moto_pid || -n $redis_pid ) ]]; then
        echo "stopping what was started" >&2
        LOCAL_STATE=$state "$here/stop.sh" >&2 || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# setsid puts the emulator in its own session so a Ctrl-C aimed at whatever ran this
# script (make, a test runner) does not reach it; nohup covers shells without setsid.
spawn() { # LOG COMMAND...
    local log=$1
    shift
    { printf '=== %s:' "$(date '+%Y-%m-%d %H:%M:%S')"; printf ' %q' "$@"; echo; } >>"$log"
    # 9>&- keeps the start lock from being inherited, or it would be held forever.
    if command -v setsid >/dev/null 2>&1; then
        setsid nohup "$@" </dev/null >>"$log" 2>&1 9>&- &
    else
        nohup "$@" </dev/null >>"$log" 2>&1 9>&- &
    fi
}

spawn "$state/logs/moto.log" \
    env PYTHONUNBUFFERED=1 "$moto_python" "$here/moto_server.py" --host 127.0.0.1 --port "$moto_port" \
    --conflicts "$conflicts"
moto_pid=$!
echo "$moto_pid" >"$state/moto.pid"

# A password of this start's own, in a file only its owner reads: not on the command line.
redis_password=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
(
    umask 077
    printf 'requirepass %s\n' "$redis_password" >"$state/redis.conf"
)
spawn "$state/logs/redis.log" \
    redis-server "$state/redis.conf" --bind 127.0.0.1 --port "$redis_port" --save "" \
    --appendonly no --daemonize no --dir "$state"
redis_pid=$!
echo "$redis_pid" >"$state/redis.pid"

wait_until_answering() { # NAME PID PATTERN PROBE PORT
    local name=$1 pid=$2 pattern=$3 probe=$4 port=$5 log="$state/logs/$1.log"
    local deadline=$((SECONDS + startup_timeout))
    # The PID may still be the forked shell for an instant before exec.
    sleep 0.2
    until "$probe" "$port" && is_ours "$pid" "$pattern"; do
        if ! is_ours "$pid" "$pattern"; then
            echo "start.sh: $name exited during startup; its log ($state_show/logs/$name.log) ends:" >&2
            log_tail "$log" >&2
            exit 1
        fi
        if ((SECONDS >= deadline)); then
            echo "start.sh: $name did not answer on 127.0.0.1:$port within ${startup_timeout} s;" \
                "its log ($state_show/logs/$name.log) ends:" >&2
            log_tail "$log" >&2
            exit 1
        fi
        sleep 0.2
    done
}

# The last 20 lines written since this start's "===" marker: earlier runs would mislead.
log_tail() { # LOG
    awk '/^=== / { n = 0 } { lines[++n] = $0 } END { for (i = (n > 20 ? n - 19 : 1); i <= n; i++) print lines[i] }' "$1"
}

wait_until_answering moto "$moto_pid" moto_server.py moto_answers "$moto_port"
wait_until_answering redis "$redis_pid" redis-server redis_answers "$redis_port"

# Written last and renamed into place: its presence means both emulators answer.
cat >"$env_file.tmp" <<EOF
AWS_ENDPOINT_URL=http://127.0.0.1:$moto_port
AWS_REGION=us-east-1
AWS_DEFAULT_REGION=us-east-1
AWS_ACCESS_KEY_ID=test
AWS_SECRET_ACCESS_KEY=test
REDIS_URL=redis://:$redis_password@127.0.0.1:$redis_port
DYNAMODB_CONFLICTS=$conflicts
EOF
mv "$env_file.tmp" "$env_file"
started=1

summary "$moto_port" "$moto_pid" "$redis_port" "$redis_pid"
echo "endpoints written to $state_show/emulators.env"
