#!/usr/bin/env bash
# RUSTC_WRAPPER for `make` (see the Makefile): sccache, with the crates that would record the
# clone's path built without it.
#
# sccache hashes each crate's dependencies by their content. A crate that includes a file of
# its build script's OUT_DIR (serde_core and serde do; rustversion, a proc-macro under
# arc-swap, too) records that path, which is inside the clone's target directory: its library
# then differed in every clone, and every crate above it (serde's users, the whole AWS SDK)
# missed the cache in a fresh clone. Remapping the clone's root out of the paths of the crates
# with a build script (cargo sets OUT_DIR for them) and of proc-macros makes them the same
# library in every clone. Those crates miss in a fresh clone (their command line names the
# clone; there are about 30, most of them small, and sccache never caches a proc-macro), the
# crates above them hit. The flag changes no code, only the paths a panic or a debugger shows.
#
# Cargo calls it as `WRAPPER RUSTC ARGS...` (or `WRAPPER WORKSPACE-WRAPPER RUSTC ARGS...`).
set -euo pipefail

args=("$@")
# Until make test's first step has installed it (infra/ensure-sccache.sh), rustc itself.
[[ -x ${SCCACHE_BIN:-} ]] || exec "${args[@]}"
remap=0
[[ -z ${OUT_DIR:-} ]] || remap=1
for ((i = 1; i + 1 < ${#args[@]}; i++)); do
    if [[ ${args[i]} == --crate-type && ${args[i + 1]} == proc-macro ]]; then
        remap=1
        break
    fi
done
if ((remap)) && [[ -n ${SCCACHE_BASEDIRS:-} ]]; then
    args+=(--remap-path-prefix "${SCCACHE_BASEDIRS%/}/=")
fi
exec "$SCCACHE_BIN" "${args[@]}"
