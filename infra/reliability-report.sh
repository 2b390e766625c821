#!/usr/bin/env bash
# Gathers the rows that the reliability suite's scenarios wrote once their invariants held
# ($LOCAL_STATE/reliability/*.md, see infra/local-cloud/tests/e2e/support.rs `report`) into
# loadtest/results/reliability.md.
#
#   infra/reliability-report.sh [STATE_DIR]     (default .local/test)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
rows=${1:-.local/test}/reliability
out=loadtest/results/reliability.md
shopt -s nullglob
files=("$rows"/*.md)
if [[ ${#files[@]} -eq 0 ]]; then
    echo "no reliability rows in $rows: run the suite first (make test)" >&2
    exit 1
fi
{
    echo "# Reliability: faults tried and invariants held"
    echo
    echo "Written by the reliability suite itself (\`make test\`: the e2e tests"
    echo "\`reliability\`, \`redis_loss\`, \`decoupling\`, \`contention\`, \`hostile\`, \`abuse\`,"
    echo "\`throttling\` and \`follow\` in"
    echo "infra/local-cloud/tests/e2e, then \`infra/reliability-report.sh\`): a scenario adds its"
    echo "row only after every one of its assertions passed, so each row is a run in which the"
    echo "invariants held. Faults are injected by the local cloud's fault switches (docs/operations.md)"
    echo "or by acting on Redis; nothing in the functions' code is switched. The"
    echo "emulator models DynamoDB's transaction conflicts in every scenario (docs/local-development.md, Local"
    echo "emulators); the contention rows count the conflicts it raised and the writes the code"
    echo "sent again after one (code retried x/y: x retries of y conflicts seen by that function)."
    echo "The \"Hostile caller\" rows are abuse, not faults: floods, bursts and crafted input that"
    echo "the limits of docs/security.md's \"Abuse resistance\" must hold against."
    echo
    echo "Last run: $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores."
    echo
    echo "| fault | switch | invariants checked afterwards | result |"
    echo "|---|---|---|---|"
    cat "${files[@]}"
} >"$out"
echo "wrote $out (${#files[@]} scenarios)"
