#!/usr/bin/env bash
# Usage: infra/sam-build-cache.sh key ARCH [--tools TEXT]   the key of what sam build makes now
#        infra/sam-build-cache.sh inputs                    the files that key reads
#        infra/sam-build-cache.sh restore KEY               .aws-sam/build from the cache (exit 1: none)
#        infra/sam-build-cache.sh store KEY                 keeps .aws-sam/build under KEY
#        infra/sam-build-cache.sh verify ARCH BINARY...     fails if a binary was compiled from
#                                                           a file of this repository the key misses
#
# A cache of whole `sam build` results, shared by every clone on this machine. `sam build` of
# every function is mostly fat-LTO links (docs/local-development.md, "The test loop"), which
# no compiler cache keeps, since a link's input is the whole program. SAM's own `sam build
# --cached` hashes each function's CodeUri folder (functions/<name>) only, not shared/ that every
# function is compiled from, so it would hand back stale bootstraps after a change to shared/.
#
# This cache keys a build on the content of every file it is compiled or generated from (the
# workspace's manifests and lock file, shared/src, functions/, the shop templates the sale page
# includes, template.yaml, samconfig.toml, these scripts), on the toolchain (rustc, cargo
# lambda, SAM CLI), the architecture and the build's environment variables (RUSTFLAGS,
# CARGO_PROFILE_*, ...). A fresh clone of a commit already built on this machine, by a
# developer's `make sam-build` or an earlier `make test`, then copies its build in seconds; any
# change to those inputs builds again. After every real build, `verify` reads the dep-info
# files cargo wrote for each bootstrap and fails if one names a file of the repository that the
# key does not read, so the list below cannot silently fall behind an `include_str!`.
#
# The cache lives in ${XDG_CACHE_HOME:-~/.cache}/follow-seckill/sam-build (SAM_BUILD_CACHE_DIR
# overrides it) and keeps the 3 newest builds (about 250 MB each). `SAM_BUILD_CACHE=off make
# sam-build` always builds.
set -euo pipefail

usage() {
    sed -n '2,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
cache_root=${SAM_BUILD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/follow-seckill/sam-build}
keep=3

# What the bootstraps and .aws-sam/build/template.yaml are made from. shared/'s tests and
# benches are not compiled into a function.
inputs() {
    git -C "$root" ls-files -co --exclude-standard --deduplicate -- \
        Cargo.toml Cargo.lock .cargo 'rust-toolchain*' clippy.toml \
        shared functions shop/templates shop/_layout \
        template.yaml samconfig.toml infra/python/sam.txt \
        infra/sam-build.sh infra/sam-build-cache.sh infra/sam-parameters.sh infra/sam-functions.sh \
        ':(exclude)shared/tests' ':(exclude)shared/benches' |
        while IFS= read -r path; do
            [[ -f $path ]] && printf '%s\n' "$path"
        done
}

tools() {
    rustc -vV
    cargo lambda --version
    sam --version
    # Variables that change what cargo compiles (not where: CARGO_TARGET_DIR is left out).
    env | grep -E '^(RUSTFLAGS|CARGO_ENCODED_RUSTFLAGS|CARGO_PROFILE_[A-Z_]+|CARGO_BUILD_[A-Z_]+|CARGO_TARGET_[A-Z0-9_]+_(LINKER|RUSTFLAGS))=' |
        sort || true
}

key() {
    local arch=$1 tools_text=$2
    {
        echo "sam-build-cache v1, for $arch"
        printf '%s\n' "$tools_text"
        inputs | tr '\n' '\0' | xargs -0 -r sha256sum
    } | sha256sum | cut -c1-32
}

[[ $# -ge 1 ]] || usage
command=$1
shift
case $command in
inputs)
    [[ $# -eq 0 ]] || usage
    inputs
    ;;
key)
    [[ $# -eq 1 || ($# -eq 3 && $2 == --tools) ]] || usage
    arch=$1
    [[ $arch == arm64 || $arch == x86_64 ]] || usage
    if [[ $# -eq 3 ]]; then tools_text=$3; else tools_text=$(tools); fi
    key "$arch" "$tools_text"
    ;;
restore)
    [[ $# -eq 1 ]] || usage
    entry=$cache_root/$1
    [[ -f $entry/build/template.yaml ]] || exit 1
    rm -rf .aws-sam/build
    mkdir -p .aws-sam
    cp -a "$entry/build" .aws-sam/build
    touch "$entry" # the newest-used entries are the ones kept
    echo "sam-build-cache: .aws-sam/build restored from $1 ($(cat "$entry/about"))"
    ;;
store)
    [[ $# -eq 1 ]] || usage
    [[ -f .aws-sam/build/template.yaml ]] || { echo "sam-build-cache: nothing built to store" >&2; exit 1; }
    mkdir -p "$cache_root"
    entry=$cache_root/$1
    if [[ ! -d $entry ]]; then
        # Copied aside first and renamed into place: a build cut off halfway is never an entry.
        staging=$(mktemp -d "$cache_root/.staging.XXXXXX")
        cp -a .aws-sam/build "$staging/build"
        echo "built $(date -u +%Y-%m-%dT%H:%MZ) from $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- 2>/dev/null || echo ' with local changes')" >"$staging/about"
        mv -T "$staging" "$entry" 2>/dev/null || rm -rf "$staging"
    fi
    touch "$entry"
    # The newest $keep entries stay; older ones, and staging left by a killed run, go.
    find "$cache_root" -maxdepth 1 -name '.staging.*' -mmin +60 -exec rm -rf {} +
    ls -1t "$cache_root" | tail -n +$((keep + 1)) | while IFS= read -r old; do
        rm -rf "${cache_root:?}/$old"
    done
    echo "sam-build-cache: stored as $1 in $cache_root (newest $keep kept)"
    ;;
verify)
    [[ $# -ge 2 ]] || usage
    arch=$1
    shift
    case $arch in
    arm64) rust_target=aarch64-unknown-linux-gnu ;;
    x86_64) rust_target=x86_64-unknown-linux-gnu ;;
    *) usage ;;
    esac
    target_dir=${CARGO_TARGET_DIR:-$root/target}
    [[ $target_dir == /* ]] || target_dir=$root/$target_dir
    read_inputs=$(inputs)
    missing=0
    for binary in "$@"; do
        depinfo=$target_dir/$rust_target/release/$binary.d
        [[ -f $depinfo ]] || { echo "sam-build-cache: no dep-info $depinfo for $binary" >&2; exit 1; }
        # "OUTPUT: DEP DEP ...", spaces in a path escaped as "\ ".
        while IFS= read -r dep; do
            # include_str!("../../x") leaves the ".." in the path.
            dep=$(realpath -m -s "$dep")
            [[ $dep == "$root"/* ]] || continue
            relative=${dep#"$root"/}
            if ! grep -qxF "$relative" <<<"$read_inputs"; then
                echo "sam-build-cache: $binary is compiled from $relative, which the cache key does not read" >&2
                missing=$((missing + 1))
            fi
        done < <(sed -n '1s/^[^:]*: *//p' "$depinfo" | sed 's/\\ /\x01/g' | tr ' ' '\n' | tr '\001' ' ' | grep -v '^$')
    done
    if [[ $missing -gt 0 ]]; then
        echo "sam-build-cache: add those files' folders to inputs() in infra/sam-build-cache.sh" >&2
        exit 1
    fi
    echo "sam-build-cache: every file of the repository that the $# bootstraps are compiled from is in the key"
    ;;
*) usage ;;
esac
