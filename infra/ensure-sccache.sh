#!/usr/bin/env bash
# Usage: infra/ensure-sccache.sh   (make test's first step; the Makefile sets the environment)
#
# Makes sure the compiler cache the Makefile names in SCCACHE_BIN is there. An sccache of at
# least $min is used as it is; otherwise sccache $SCCACHE_VERSION is installed once per machine
# with `cargo install --locked --no-default-features` (the local disk cache only; a few minutes
# on 2 cores) into SCCACHE_HOME (~/.cache/follow-seckill/sccache-VERSION), where every clone
# finds it. Older ones (Debian's 0.4) have no base directories, so two clones never shared an
# entry. The cache only saves time: when the install fails, the wrapper (infra/sccache-rustc.sh)
# compiles without it and this step says so, without failing the run.
#
# Stdout stays empty; progress and any cargo error go to stderr.
set -euo pipefail

min=0.13.0
if [[ -z ${SCCACHE_BIN:-} ]]; then
    echo "ensure-sccache: SCCACHE=off or a RUSTC_WRAPPER of your own; compiling without sccache" >&2
    exit 0
fi
: "${SCCACHE_VERSION:?the Makefile sets SCCACHE_VERSION}" "${SCCACHE_HOME:?the Makefile sets SCCACHE_HOME}"

# `sccache 0.19.0` -> 0.19.0; sort -V puts the older of the two first.
current() {
    local have
    [[ -x $SCCACHE_BIN ]] && have=$("$SCCACHE_BIN" --version 2>/dev/null | awk '{print $2}') &&
        [[ -n $have && $(printf '%s\n%s\n' "$min" "$have" | sort -V | head -n1) == "$min" ]] &&
        echo "$have"
}

if have=$(current); then
    echo "ensure-sccache: sccache $have ($SCCACHE_BIN)" >&2
    exit 0
fi
if [[ $SCCACHE_BIN != "$SCCACHE_HOME/bin/sccache" ]]; then
    echo "ensure-sccache: $SCCACHE_BIN is older than $min; this run compiles with it, the next" \
        "with sccache $SCCACHE_VERSION" >&2
fi

mkdir -p "$SCCACHE_HOME"
# Two clones' first runs install it once: the second waits, then finds it there.
exec 9>"$SCCACHE_HOME.lock"
flock 9
if [[ -x $SCCACHE_HOME/bin/sccache ]]; then
    exit 0
fi
echo "ensure-sccache: installing sccache $SCCACHE_VERSION into $SCCACHE_HOME (once per machine) ..." >&2
started=$SECONDS
log=$(mktemp)
# A target directory of its own, removed after: the clone's target/ is not touched.
if cargo install sccache --version "$SCCACHE_VERSION" --locked --no-default-features \
    --root "$SCCACHE_HOME" --target-dir "$SCCACHE_HOME/build" >"$log" 2>&1; then
    echo "ensure-sccache: installed in $((SECONDS - started)) s" >&2
else
    tail -n 30 "$log" >&2
    echo "ensure-sccache: WARNING: cargo install sccache failed; compiling without a cache" >&2
fi
rm -rf "$log" "$SCCACHE_HOME/build"
