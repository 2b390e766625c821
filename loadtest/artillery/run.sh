#!/usr/bin/env bash
# Runs one Artillery scenario against a target and prints a short summary; what
# loadtest/load.sh and loadtest/smoke-load.sh share.
#
#   loadtest/artillery/run.sh SCENARIO TARGET REPORT [LOG]
#   loadtest/artillery/run.sh --install-only
#
# SCENARIO is follow or seckill; REPORT the JSON report to write; with LOG, Artillery's own
# output goes there instead of the terminal (and its tail is shown on failure). Installs the
# pinned node packages into loadtest/artillery/node_modules first when they are missing or
# the lock file changed. Exit status: non-zero when an `ensure` threshold, the flash-sale
# check or Artillery itself failed.
set -euo pipefail

dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

install_deps() {
    local want stamp=$dir/node_modules/.package-lock.sha256
    want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
    if [[ -x $dir/node_modules/.bin/artillery && "$(cat "$stamp" 2>/dev/null)" == "$want" ]]; then
        return 0
    fi
    if ! command -v npm >/dev/null; then
        echo "Artillery needs Node.js 20 or newer with npm; install them (e.g. apt-get install nodejs npm) and retry" >&2
        exit 1
    fi
    local major
    major=$(node -p 'process.versions.node.split(".")[0]')
    if ((major < 20)); then
        echo "Artillery needs Node.js 20 or newer; this is $(node --version)" >&2
        exit 1
    fi
    echo "installing Artillery into loadtest/artillery/node_modules (npm ci; the first time takes a minute or two) ..."
    # --ignore-scripts: no package needs its install script here (the only ones download
    # browsers for Playwright, which these scenarios don't use, or build optional native
    # modules); skipping them makes the install faster and quieter. npm's http log shows
    # progress as a count of fetched packages.
    (
        cd "$dir"
        PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --ignore-scripts --no-audit --no-fund \
            --prefer-offline --loglevel=http 2>&1 |
            awk '/^npm http fetch/ { n++; if (n % 50 == 0) { printf "  %d packages fetched ...\n", n; fflush() } next }
                 /EBADENGINE/ { next }   # artillery declares node >= 22; it runs on 20 (tested)
                 { print; fflush() }'
    )
    echo "$want" >"$stamp"
    echo "installed $(node -p "require('$dir/node_modules/artillery/package.json').version" 2>/dev/null || echo ?) "
}

if [[ ${1:-} == --install-only ]]; then
    install_deps
    exit 0
fi

if (($# < 3)); then
    echo "usage: $0 follow|seckill TARGET REPORT [LOG]" >&2
    exit 2
fi
scenario=$1 target=$2 report=$3 log=${4:-}
case $scenario in
    follow | seckill) ;;
    *)
        echo "unknown scenario '$scenario': follow or seckill" >&2
        exit 2
        ;;
esac
install_deps

mkdir -p "$(dirname "$report")"
report=$(cd "$(dirname "$report")" && pwd)/$(basename "$report")
check=
if [[ $scenario == seckill ]]; then
    check=${report%.json}-check.json
fi
rm -f "$report" ${check:+"$check"}

overrides=$(cd "$dir" && node overrides.js "$scenario.yml")
export ARTILLERY_DISABLE_TELEMETRY=true
cmd=(node_modules/.bin/artillery run --target "$target" --overrides "$overrides" --output "$report" "$scenario.yml")
status=0
if [[ -n $log ]]; then
    (cd "$dir" && SECKILL_CHECK_FILE=$check "${cmd[@]}") >"$log" 2>&1 || status=$?
else
    (cd "$dir" && SECKILL_CHECK_FILE=$check "${cmd[@]}") || status=$?
fi

echo
echo "== $scenario against $target: report $report"
if [[ ! -s $report ]]; then
    echo "Artillery wrote no report (exit status $status)"
    [[ -n $log ]] && tail -n 40 "$log"
    exit 1
fi
(cd "$dir" && node summary.js "$report" ${check:+"$check"}) || status=1
if [[ -n $log ]]; then
    # The ensure plugin's verdicts, which the summary does not repeat.
    grep -E '^(ok|fail): ' "$log" | sed 's/^/ensure:        /' || true
    if ((status != 0)); then
        echo "-- the last lines of Artillery's output ($log):"
        tail -n 25 "$log"
    fi
fi
if ((status != 0)); then
    echo "== $scenario FAILED (exit status $status)"
else
    echo "== $scenario ok"
fi
exit "$status"
