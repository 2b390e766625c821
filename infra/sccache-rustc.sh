#!/usr/bin/env bash
# RUSTC_WRAPPER for `make` (see the Makefile): sccache, with every proc-macro built so that its
# library does not depend on the clone's path.
#
# sccache hashes each crate's dependencies by their content. A proc-macro that includes a file
# of its build script's OUT_DIR (rustversion does, under arc-swap and so the whole AWS SDK)
# records that path, which is the clone's target directory: its library then differed in every
# clone, and every crate above it missed the cache in a fresh clone (71 of 236 compiles of the
# debug build, the SDK's crates among them). Remapping the clone's root out of a proc-macro's
# paths makes it the same library everywhere. sccache never caches a proc-macro, so the added
# flag changes no cache key; it changes no code either, only the paths the macro would print.
#
# Cargo calls it as `WRAPPER RUSTC ARGS...` (or `WRAPPER WORKSPACE-WRAPPER RUSTC ARGS...`).
set -euo pipefail

args=("$@")
for ((i = 1; i + 1 < ${#args[@]}; i++)); do
    if [[ ${args[i]} == --crate-type && ${args[i + 1]} == proc-macro ]]; then
        args+=(--remap-path-prefix "${SCCACHE_BASEDIRS%/}/=")
        break
    fi
done
exec "${SCCACHE_BIN:?the Makefile sets SCCACHE_BIN}" "${args[@]}"
