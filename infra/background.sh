# shellcheck shell=bash
# Sourced by the scripts that start a local server in the background, wait for it and stop
# it by its PID.
#
# wait_ready LOG PATTERN PID SECONDS NAME: waits until LOG has a line matching PATTERN,
# polling five times a second for SECONDS at most; fails with the log on stderr if process
# PID exits first or the time runs out.
wait_ready() {
    local log=$1 pattern=$2 pid=$3 seconds=$4 name=$5 i
    for ((i = 0; i < seconds * 5; i++)); do
        grep -q "$pattern" "$log" && return 0
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "$name did not start:" >&2
            cat "$log" >&2
            return 1
        fi
        sleep 0.2
    done
    grep -q "$pattern" "$log" && return 0
    echo "$name did not get ready in $seconds s:" >&2
    cat "$log" >&2
    return 1
}

# stop_pid SIGNAL PID: sends SIGNAL (INT, TERM, ...) to PID and waits until it has exited,
# whatever it answers; never fails, so that a cleanup goes on to its next process.
stop_pid() {
    kill "-$1" "$2" 2>/dev/null || true
    wait "$2" 2>/dev/null || true
}
