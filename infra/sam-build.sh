#!/usr/bin/env bash
# Usage: infra/sam-build.sh [arm64|x86_64]   (default arm64, the template's default)
#
# The real `sam build` of template.yaml for Lambda, from the project-local venv .local/venv/sam
# (the SAM CLI and cargo-lambda with its zig linker, pinned in infra/python/sam.txt), with
# samconfig.toml's parameters and `Architecture=ARCH` (infra/sam-parameters.sh), so that the
# template's Architectures and the compile target agree. Every function is `BuildMethod: rust-cargolambda`: SAM runs
# `cargo lambda build --release [--arm64] --bin NAME` per function, into the workspace's
# target/, and copies the binary to .aws-sam/build/<LogicalId>/bootstrap. Prints the whole
# build's wall time; infra/sam-check.sh checks the result. A build of the same inputs made
# earlier on this machine is taken from infra/sam-build-cache.sh's cache instead
# (SAM_BUILD_CACHE=off always builds).
#
# One build of a clone at a time (a lock in .local/): `make test` starts one in the background
# while the tests wait on the emulators, and its `sam build` step, the same command, waits for
# that one and takes its result from the cache. Two at once would race: cargo-lambda moves each
# binary out of target/ into target/lambda/, and the second mover finds nothing.
set -euo pipefail

usage() {
    echo "usage: infra/sam-build.sh [arm64|x86_64]" >&2
    exit 2
}
[[ $# -le 1 ]] || usage
arch=${1:-arm64}
case $arch in
arm64) rust_target=aarch64-unknown-linux-gnu ;;
x86_64) rust_target=x86_64-unknown-linux-gnu ;;
*) usage ;;
esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
mkdir -p .local
exec 8>.local/sam-build.lock
if ! flock -n 8; then
    echo "sam-build: another build of this clone is running; waiting for it"
    flock 8
fi

# cargo-lambda links with zig but needs Rust's standard library for the target; without it
# the build fails deep inside the first function with "can't find crate for `core`".
if command -v rustup >/dev/null 2>&1; then
    if ! rustup target list --installed | grep -qx "$rust_target"; then
        echo "sam-build: the Rust target $rust_target (Lambda $arch) is not installed." >&2
        echo "  Install it with: rustup target add $rust_target" >&2
        [[ $arch == arm64 ]] && echo "  or build for x86_64 Lambda: make sam-build ARCH=x86_64" >&2
        exit 1
    fi
elif [[ ! -d $(rustc --print sysroot)/lib/rustlib/$rust_target ]]; then
    echo "sam-build: rustc has no standard library for $rust_target (Lambda $arch)." >&2
    exit 1
fi

bash infra/python/ensure-venv.sh sam
venv="$root/.local/venv/sam"
# cargo-lambda and the zig it links with (the ziglang package) are found on PATH.
export PATH="$venv/bin:$PATH"
export SAM_CLI_TELEMETRY=0

echo "sam-build: $(sam --version), $(cargo lambda --version), $arch ($rust_target)"
started=$SECONDS
# A build of exactly these inputs made earlier on this machine, by any clone, is copied
# instead of built again (infra/sam-build-cache.sh says what the key reads and why).
cache=${SAM_BUILD_CACHE:-on}
if [[ $cache != off ]]; then
    key=$(infra/sam-build-cache.sh key "$arch")
    if infra/sam-build-cache.sh restore "$key"; then
        echo "sam-build: every function built for $arch, reused from the cache in $((SECONDS - started)) s (SAM_BUILD_CACHE=off builds anyway)"
        exit 0
    fi
    echo "sam-build: nothing cached for these inputs (key $key); building"
fi
# SAM runs one `cargo lambda build --bin NAME` per function, and cargo's lock on target/ lets
# only one of them work at a time, however many SAM starts; a fat-LTO link keeps one core busy.
# One cargo invocation for every function first links them two at a time on two cores; the
# per-function builds of `sam build` then find them fresh (same profile, target and features).
packages=()
while read -r binary; do
    packages+=(-p "$binary")
done < <(infra/sam-functions.sh | awk '{print $2}' | sort -u)
arch_flag=()
[[ $arch == arm64 ]] && arch_flag=(--arm64)
echo "sam-build: cargo lambda build --release${arch_flag[*]:+ ${arch_flag[*]}} -p ... ($((${#packages[@]} / 2)) bundles at once)"
cargo lambda build --release "${arch_flag[@]}" "${packages[@]}"
echo "sam-build: compiled in $((SECONDS - started)) s; sam build ..."
sam build --template template.yaml --parameter-overrides "$(infra/sam-parameters.sh default "$arch")"
elapsed=$((SECONDS - started))
# infra/sam-check.sh reads which architecture the bootstraps were built for.
echo "$arch" >.aws-sam/build/architecture
binaries=()
while read -r binary; do
    binaries+=("$binary")
done < <(infra/sam-functions.sh | awk '{print $2}' | sort -u)
infra/sam-build-cache.sh verify "$arch" "${binaries[@]}"
# Kept only if no input changed while it built (an edit during the build makes another key).
if [[ $cache != off && $(infra/sam-build-cache.sh key "$arch") == "$key" ]]; then
    infra/sam-build-cache.sh store "$key"
fi
echo "sam-build: every function built for $arch in ${elapsed} s ($((elapsed / 60)) min $((elapsed % 60)) s)"
