#!/usr/bin/env bash
# Usage: infra/sam-functions.sh [TEMPLATE]   (default template.yaml)
#
# Prints "LogicalId Binary Handler" for every AWS::Serverless::Function of the template, Binary
# being its Metadata.BuildProperties.Binary (the workspace member and bin that sam build
# compiles, a bundle of functions) and Handler the function of it that runs (`_HANDLER`):
# what infra/sam-check.sh and `loadtest/bench.sh functions --sam-build` find in .aws-sam/build.
# Fails if a function has no Binary. Reads YAML with the SAM CLI's venv (.local/venv/sam).
set -euo pipefail

[[ $# -le 1 ]] || { echo "usage: infra/sam-functions.sh [TEMPLATE]" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
template=${1:-$root/template.yaml}
[[ -f $template ]] || { echo "sam-functions: no template $template" >&2; exit 2; }
bash "$root/infra/python/ensure-venv.sh" sam

# Tags (!Ref, !Sub, ...) are read as nothing: only each resource's Type and Metadata matter.
"$root/.local/venv/sam/bin/python" - "$template" <<'PY'
import sys, yaml

class Loader(yaml.SafeLoader):
    pass

Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
with open(sys.argv[1]) as f:
    template = yaml.load(f, Loader=Loader)
for logical_id, resource in template["Resources"].items():
    if resource.get("Type") != "AWS::Serverless::Function":
        continue
    binary = ((resource.get("Metadata") or {}).get("BuildProperties") or {}).get("Binary")
    if not binary:
        sys.exit(f"sam-functions: {logical_id} has no Metadata.BuildProperties.Binary")
    handler = (resource.get("Properties") or {}).get("Handler") or "bootstrap"
    print(logical_id, binary, handler)
PY
