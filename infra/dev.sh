#!/usr/bin/env bash
# `make dev`: the whole system locally. Builds the functions and the local cloud runner,
# starts the emulators (unless AWS_ENDPOINT_URL and REDIS_URL already point somewhere, as in
# the LocalStack profile), then runs every function behind the HTTP API and the event
# sources of template.yaml until Ctrl-C, which stops everything this started.
#
# Extra arguments go to `local-cloud up`, e.g. `make dev ARGS="--instances 4 --quiet"`.
# The template's route throttling is enforced, as in AWS; for a load test above it,
# `make dev ARGS="--route-throttling off"` (or LOCAL_CLOUD_ROUTE_THROTTLING=off) lifts it.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

profile=${PROFILE:-debug}
cargo_flags=()
[[ $profile == release ]] && cargo_flags=(--release)
echo "building the functions and the runner ($profile) ..."
cargo build --workspace --bins "${cargo_flags[@]}"

runner=(target/"$profile"/local-cloud up --template template.yaml --binaries-dir target/"$profile" "$@")
if [[ -n ${AWS_ENDPOINT_URL:-} && -n ${REDIS_URL:-} ]]; then
    echo "using the endpoints from the environment: $AWS_ENDPOINT_URL"
    exec "${runner[@]}"
fi
LOCAL_STATE=.local/dev exec "$root/infra/run-with-emulators.sh" "${runner[@]}"
