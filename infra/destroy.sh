#!/usr/bin/env bash
# Usage: infra/destroy.sh ENV   (ENV: dev or prod, samconfig.toml's environments)
#
# Deletes the stack of samconfig.toml's environment ENV. `sam delete` alone fails on a
# bucket that still holds objects (CloudFormation deletes only empty buckets), and the shop's
# bucket always does (the pages, the sale pages), so this first empties every bucket of the
# stack that the stack would delete (every AWS::S3::Bucket resource it lists; a bucket with
# DeletionPolicy Retain is left as it is), object versions and delete markers included, then
# runs `sam delete --config-env ENV --no-prompts`. What the template retains (both tables,
# the user pool, the cache's final snapshot) outlives it: delete those by hand if unwanted.
#
# Needs the deployer's AWS credentials. The AWS CLI and SAM CLI come from the project-local
# venvs (.local/venv/aws, .local/venv/sam); AWS_CLI and SAM_CLI name other commands (the
# teardown's contract test passes recording stand-ins).
set -euo pipefail

usage() { echo "usage: infra/destroy.sh dev|prod" >&2; exit 2; }
[[ $# -eq 1 ]] || usage
env=$1
[[ $env == dev || $env == prod ]] || usage
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

# The environment's stack and region, as `sam delete --config-env` will read them.
read -r stack region < <(python3 - samconfig.toml "$env" <<'PY'
import sys, tomllib
path, env = sys.argv[1:]
with open(path, "rb") as f:
    config = tomllib.load(f)
def setting(name):
    for section in (env, "default"):
        value = config.get(section, {}).get("global", {}).get("parameters", {}).get(name)
        if value:
            return value
    sys.exit(f"destroy: samconfig.toml's {env} has no {name}")
print(setting("stack_name"), setting("region"))
PY
)

if [[ -n ${AWS_CLI:-} ]]; then
    read -r -a aws <<<"$AWS_CLI"
else
    bash infra/python/ensure-venv.sh aws
    aws=(.local/venv/aws/bin/aws)
fi
if [[ -n ${SAM_CLI:-} ]]; then
    read -r -a sam <<<"$SAM_CLI"
else
    bash infra/python/ensure-venv.sh sam
    sam=(.local/venv/sam/bin/sam)
    export SAM_CLI_TELEMETRY=0
fi
aws+=(--region "$region")

# logical id, type and physical id of every resource of the stack
resources=$("${aws[@]}" cloudformation list-stack-resources --stack-name "$stack" \
    --query 'StackResourceSummaries[].[LogicalResourceId,ResourceType,PhysicalResourceId]' \
    --output text)

# The buckets the stack would delete: those whose template entry does not retain them.
retained=$(python3 - template.yaml <<'PY'
import re, sys
# The template's top-level resources whose DeletionPolicy is Retain or RetainExceptOnCreate
# (a YAML parser would need the template's tags; its layout is fixed: two-space resource ids).
resource = None
for line in open(sys.argv[1]):
    match = re.match(r"^  ([A-Za-z0-9]+):\s*$", line)
    if match:
        resource = match.group(1)
    elif resource and re.match(r"^    DeletionPolicy:\s*Retain", line):
        print(resource)
PY
)

emptied=0
while read -r logical type physical; do
    [[ $type == AWS::S3::Bucket && -n $physical ]] || continue
    if grep -qx "$logical" <<<"$retained"; then
        echo "destroy: $logical ($physical) is retained by the template; left as it is"
        continue
    fi
    echo "destroy: emptying $logical ($physical)"
    "${aws[@]}" s3 rm "s3://$physical" --recursive --only-show-errors
    # A versioned bucket keeps old versions and delete markers, which also block deletion.
    while true; do
        versions=$("${aws[@]}" s3api list-object-versions --bucket "$physical" --max-items 1000 \
            --query '{Objects: [Versions, DeleteMarkers][][].{Key: Key, VersionId: VersionId}}' \
            --output json)
        [[ $versions == *'"Key"'* ]] || break
        "${aws[@]}" s3api delete-objects --bucket "$physical" --delete "$versions" >/dev/null
    done
    emptied=$((emptied + 1))
done <<<"$resources"

echo "destroy: $emptied bucket(s) emptied; deleting stack $stack ($env, $region)"
"${sam[@]}" delete --config-env "$env" --stack-name "$stack" --region "$region" --no-prompts
