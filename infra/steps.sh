#!/usr/bin/env bash
# Runs named steps one after another, each printed before it runs, and ends with a summary
# of what passed, what failed and how long each took. Every step runs even after a failure,
# so one run shows everything that is wrong; the exit status is non-zero if any step failed.
#
#   infra/steps.sh "format|cargo fmt --all -- --check" "tests|cargo nextest run"
set -uo pipefail

names=()
results=()
failed=0
for step in "$@"; do
    name=${step%%|*}
    command=${step#*|}
    printf '\n==> %s: %s\n' "$name" "$command"
    started=$SECONDS
    if bash -c "$command"; then
        result=ok
    else
        result=FAILED
        failed=1
    fi
    names+=("$name")
    results+=("$(printf '%-6s %4ss' "$result" $((SECONDS - started)))")
done

printf '\n== summary ==\n'
for i in "${!names[@]}"; do
    printf '  %-40s %s\n' "${names[$i]}" "${results[$i]}"
done
exit $failed
