#!/usr/bin/env bash
# Runs named steps one after another, each printed before it runs, and ends with a summary
# of what passed, what failed and how long each took. Every step runs even after a failure,
# so one run shows everything that is wrong; the exit status is non-zero if any step failed.
#
#   infra/steps.sh "format|cargo fmt --all -- --check" "tests|cargo nextest run"
#
# A step whose name starts with `&` runs in the background, at the lowest CPU priority, beside
# the steps after it (its output goes to a log, printed when it ends): for work that a later
# step needs and that would otherwise wait for it, such as a build that a step waiting on the
# emulators leaves the CPU for. It ends before the summary, which counts it like the others.
set -uo pipefail

names=()
results=()
failed=0
background_pids=()
background_names=()
background_logs=()
background_started=()

record() {
    names+=("$1")
    results+=("$(printf '%-6s %4ss' "$2" "$3")")
    [[ $2 == ok ]] || failed=1
}

# Waits for the background steps, prints each one's log and records its result.
join_background() {
    local i status
    for i in "${!background_pids[@]}"; do
        if wait "${background_pids[$i]}"; then status=ok; else status=FAILED; fi
        printf '\n==> %s (ran in the background): %s\n' "${background_names[$i]}" "$status"
        cat "${background_logs[$i]}"
        rm -f "${background_logs[$i]}"
        record "${background_names[$i]} (background)" "$status" \
            "$(($(date +%s) - background_started[i]))"
    done
    background_pids=()
}
trap 'kill "${background_pids[@]}" 2>/dev/null' EXIT

for step in "$@"; do
    name=${step%%|*}
    command=${step#*|}
    if [[ $name == '&'* ]]; then
        name=${name#&}
        log=$(mktemp)
        printf '\n==> %s, in the background: %s\n' "$name" "$command"
        nice -n 19 bash -c "$command" >"$log" 2>&1 &
        background_pids+=($!)
        background_names+=("$name")
        background_logs+=("$log")
        background_started+=("$(date +%s)")
        continue
    fi
    printf '\n==> %s: %s\n' "$name" "$command"
    started=$SECONDS
    if bash -c "$command"; then
        result=ok
    else
        result=FAILED
    fi
    record "$name" "$result" $((SECONDS - started))
done
join_background

printf '\n== summary ==\n'
for i in "${!names[@]}"; do
    printf '  %-52s %s\n' "${names[$i]}" "${results[$i]}"
done
exit $failed
