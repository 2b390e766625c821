#!/usr/bin/env bash
# Runs one Artillery scenario against a target and prints a short summary; what
# loadtest/load.sh and loadtest/smoke-load.sh share.
#
#   loadtest/artillery/run.sh SCENARIO TARGET REPORT [LOG]
#   loadtest/artillery/run.sh --install-only
#
# SCENARIO is follow or seckill; REPORT the JSON report to write; with LOG, Artillery's own
# output goes there instead of the terminal (and its tail is shown on failure). Installs the
# pinned node packages (node_modules, below) first when they are missing or the lock file
# changed. Exit status: non-zero when an `ensure` threshold, the flash-sale check or Artillery
# itself failed.
set -euo pipefail

dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The node packages live in ${XDG_CACHE_HOME:-~/.cache}/follow-seckill/artillery/<lock's sha256>
# (ARTILLERY_CACHE_DIR overrides the folder), shared by every clone on this machine, and
# node_modules here is a link to them: a fresh clone links what an earlier one installed instead
# of running npm ci again (a minute). ARTILLERY_CACHE=off installs into node_modules itself.
install_deps() {
    local want target
    want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
    if [[ ${ARTILLERY_CACHE:-on} == off ]]; then
        [[ ! -L $dir/node_modules ]] || rm -f "$dir/node_modules"
        target=$dir
    else
        target=${ARTILLERY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/follow-seckill/artillery}/${want:0:16}
    fi
    if ! is_installed "$target" "$want"; then
        mkdir -p "$target"
        # Two clones never run npm ci into the same folder at once.
        exec 8>"$target/.lock"
        flock 8
        is_installed "$target" "$want" || npm_ci "$target" "$want"
        exec 8>&-
    fi
    if [[ $target != "$dir" ]]; then
        touch "$target"
        # A folder from before the packages were shared gives way to the link.
        [[ -L $dir/node_modules || ! -e $dir/node_modules ]] || rm -rf "$dir/node_modules"
        ln -sfn "$target/node_modules" "$dir/node_modules"
        # The 3 newest installs stay.
        find "$(dirname "$target")" -mindepth 1 -maxdepth 1 -type d -printf '%T@ %p\n' |
            sort -rn | tail -n +4 | cut -d' ' -f2- |
            while IFS= read -r old; do rm -rf "$old"; done
    fi
}

is_installed() {
    [[ -x $1/node_modules/.bin/artillery && "$(cat "$1/node_modules/.package-lock.sha256" 2>/dev/null)" == "$2" ]]
}

# npm ci of package-lock.json into $1/node_modules, stamped with the lock's sha256 ($2).
npm_ci() {
    local target=$1 want=$2
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
    echo "installing Artillery into $target/node_modules (npm ci; the first time takes a minute or two) ..."
    [[ $target == "$dir" ]] || cp "$dir/package.json" "$dir/package-lock.json" "$target/"
    # --ignore-scripts: no package needs its install script here (the only ones download
    # browsers for Playwright, which these scenarios don't use, or build optional native
    # modules); skipping them makes the install faster and quieter. npm's http log shows
    # progress as a count of fetched packages.
    (
        cd "$target"
        PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --ignore-scripts --no-audit --no-fund \
            --prefer-offline --loglevel=http 2>&1 |
            awk '/^npm http fetch/ { n++; if (n % 50 == 0) { printf "  %d packages fetched ...\n", n; fflush() } next }
                 /EBADENGINE/ { next }   # artillery declares node >= 22; it runs on 20 (tested)
                 { print; fflush() }'
    )
    echo "$want" >"$target/node_modules/.package-lock.sha256"
    echo "installed $(node -p "require('$target/node_modules/artillery/package.json').version" 2>/dev/null || echo ?) "
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
