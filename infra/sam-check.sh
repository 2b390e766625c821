#!/usr/bin/env bash
# Usage: infra/sam-check.sh [arm64|x86_64]   (default: what infra/sam-build.sh last built)
#
# Checks what `sam build` left in .aws-sam/build, for every AWS::Serverless::Function of
# template.yaml: its bootstrap is there, is an ELF for the architecture (e_machine 62 x86-64,
# 183 aarch64), is under 8 MiB (docs/DESIGN.md §6), and starts and answers one invocation behind the
# local runner (`local-cloud check` against the emulators: an HTTP request through the local
# API for a function with a route, an empty batch or a scheduled event for the others).
# arm64 bootstraps cannot run on an x86_64 machine: there the last part is skipped, loudly.
set -euo pipefail

usage() {
    echo "usage: infra/sam-check.sh [arm64|x86_64]" >&2
    exit 2
}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=.aws-sam/build
[[ $# -le 1 ]] || usage
if [[ $# -eq 1 ]]; then
    arch=$1
elif [[ -f $build/architecture ]]; then
    arch=$(cat "$build/architecture")
else
    echo "sam-check: nothing built in $build; run make sam-build first" >&2
    exit 1
fi
case $arch in
arm64) machine=183 ;;
x86_64) machine=62 ;;
*) usage ;;
esac
max_bytes=$((8 * 1024 * 1024))

started=$SECONDS

functions=$(infra/sam-functions.sh)
count=$(wc -l <<<"$functions")

# The runner wants DIR/<Binary>: a directory of links to the bootstraps.
links=.local/sam-check/binaries
rm -rf "$links"
mkdir -p "$links"
failed=0
printf '%-34s %-44s %9s  %s\n' "function" "binary: handler" "MiB" "ELF"
while read -r logical_id binary handler; do
    bootstrap="$build/$logical_id/bootstrap"
    if [[ ! -f $bootstrap ]]; then
        echo "FAIL $logical_id: $bootstrap is missing"
        failed=$((failed + 1))
        continue
    fi
    bytes=$(stat -c %s "$bootstrap")
    magic=$(od -An -tx1 -N4 "$bootstrap" | tr -d ' ')
    # e_machine: two little-endian bytes at offset 18 of the ELF header.
    found=$(od -An -tu2 -j18 -N2 --endian=little "$bootstrap" | tr -d ' ')
    mib=$(awk -v b="$bytes" 'BEGIN { printf "%.2f", b / 1048576 }')
    problems=()
    [[ $magic == 7f454c46 ]] || problems+=("not an ELF file")
    [[ $found == "$machine" ]] || problems+=("e_machine $found, not $machine ($arch)")
    ((bytes < max_bytes)) || problems+=("$mib MiB, not under 8 MiB")
    printf '%-34s %-44s %9s  %s\n' "$logical_id" "$binary: $handler" "$mib" "e_machine $found"
    if ((${#problems[@]})); then
        echo "FAIL $logical_id: ${problems[*]}"
        failed=$((failed + 1))
    fi
    # The functions of one bundle share its bootstrap; the runner hands each its _HANDLER.
    ln -sfn "$root/$bootstrap" "$links/$binary"
done <<<"$functions"
if ((failed)); then
    echo "sam-check: $failed of $count functions failed the file checks" >&2
    exit 1
fi
echo "sam-check: $count bootstraps present, ELF e_machine $machine ($arch), each under 8 MiB"

host=$(uname -m)
if [[ $arch == x86_64 && $host != x86_64 ]] || [[ $arch == arm64 && $host != aarch64 ]]; then
    echo "sam-check: SKIPPED running them: $arch bootstraps do not run on this $host machine" >&2
    exit 0
fi

cargo build -q -p local-cloud
LOCAL_STATE=.local/sam-check infra/run-with-emulators.sh \
    target/debug/local-cloud check --template template.yaml --binaries-dir "$links" \
    --stack-name "samcheck$$"
echo "sam-check: ok in $((SECONDS - started)) s"
