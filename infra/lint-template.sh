#!/usr/bin/env bash
# Usage: infra/lint-template.sh
#
# Lints template.yaml with cfn-lint and `sam validate --lint`, from the project-local
# venv .local/venv/lint (pinned in infra/python/lint.txt). Fails on any error or warning.
# Works from any cwd. Needs no AWS account and no network once the venv exists: the
# credentials below are dummies and only keep boto from looking elsewhere.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

bash "$root/infra/python/ensure-venv.sh" lint
bin=.local/venv/lint/bin

# Never reach out to AWS or to a profile the caller happens to have configured.
unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL
export SAM_CLI_TELEMETRY=0
export AWS_ACCESS_KEY_ID=lint-dummy
export AWS_SECRET_ACCESS_KEY=lint-dummy
export AWS_DEFAULT_REGION=us-east-1
export AWS_REGION=us-east-1
export AWS_EC2_METADATA_DISABLED=true
export AWS_CONFIG_FILE=/dev/null
export AWS_SHARED_CREDENTIALS_FILE=/dev/null

run() {
    echo "+ $*"
    "$@"
}

run "$bin/cfn-lint" template.yaml
run "$bin/sam" validate --lint --template template.yaml --region us-east-1

echo "lint-template: ok (cfn-lint $("$bin/cfn-lint" --version | awk '{print $2}'), $("$bin/sam" --version))"
