#!/usr/bin/env bash
# CC for `make` (see the Makefile): the C compiler through sccache, for the C of build
# scripts. aws-lc-sys (under rustls, under the AWS SDK's HTTPS client) compiles AWS-LC's
# hundreds of C and assembler files in every fresh clone; from the cache, they are copied.
# The cc crate calls it as it would call cc; without sccache (until make test's first
# step installed it), it is cc itself.
set -euo pipefail

[[ -x ${SCCACHE_BIN:-} ]] || exec cc "$@"
exec "$SCCACHE_BIN" cc "$@"
