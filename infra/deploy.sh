#!/usr/bin/env bash
# Usage: infra/deploy.sh ENV [--print]   (ENV: dev or prod, samconfig.toml's environments)
#
# `sam deploy --config-env ENV` of what `make sam-build` built, with the Architecture it was
# built for: a command-line `--parameter-overrides` replaces samconfig.toml's list, so the
# environment's own parameters are passed with it (infra/sam-parameters.sh). Deploying a
# template whose Architecture differs from the bootstraps' would ship binaries that Lambda
# cannot run. --print prints the command instead of running it. Then `make deploy-pages`.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
usage() { echo "usage: infra/deploy.sh dev|prod [--print]" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage
env=$1
[[ $env == dev || $env == prod ]] || usage
print=0
[[ ${2:-} == "" ]] || { [[ $2 == --print ]] || usage; print=1; }

arch_file=.aws-sam/build/architecture
[[ -f .aws-sam/build/template.yaml && -f $arch_file ]] ||
    { echo "deploy: nothing built; run make sam-build [ARCH=arm64|x86_64] first" >&2; exit 1; }
arch=$(cat "$arch_file")
command=(sam deploy --config-env "$env" --parameter-overrides "$(infra/sam-parameters.sh "$env" "$arch")")
if ((print)); then
    printf '%q ' "${command[@]}"
    echo
    exit 0
fi
bash infra/python/ensure-venv.sh sam
export PATH="$root/.local/venv/sam/bin:$PATH" SAM_CLI_TELEMETRY=0
echo "deploy: $env, bootstraps built for $arch"
exec "${command[@]}"
