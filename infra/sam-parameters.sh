#!/usr/bin/env bash
# Usage: infra/sam-parameters.sh ENV ARCH
#
# Prints the template parameters of samconfig.toml's environment ENV (default, dev or prod:
# its global.parameters.parameter_overrides) followed by Architecture=ARCH, as one
# `--parameter-overrides` value. A command-line `--parameter-overrides` replaces samconfig's
# whole list, so every script that must pass the Architecture it built (sam-build.sh,
# sam-local.sh, deploy.sh) passes this instead, and the environments' parameters still apply.
set -euo pipefail

[[ $# -eq 2 ]] || { echo "usage: infra/sam-parameters.sh ENV ARCH" >&2; exit 2; }
[[ $2 == arm64 || $2 == x86_64 ]] || { echo "sam-parameters: ARCH must be arm64 or x86_64, got '$2'" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python3 - "$root/samconfig.toml" "$1" "$2" <<'PY'
import sys, tomllib
path, env, arch = sys.argv[1:]
with open(path, "rb") as f:
    config = tomllib.load(f)
if env not in config:
    sys.exit(f"sam-parameters: samconfig.toml has no environment {env!r} (it has {', '.join(k for k in config if k != 'version')})")
shared = config[env].get("global", {}).get("parameters", {}).get("parameter_overrides", "")
if "Architecture=" in shared:
    sys.exit(f"sam-parameters: samconfig.toml's {env} sets Architecture; the build decides it")
print(" ".join(filter(None, [shared, f"Architecture={arch}"])))
PY
