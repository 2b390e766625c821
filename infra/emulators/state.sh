# shellcheck shell=bash
# Sourced by start.sh and stop.sh: the state directory of one pair of emulators, from
# LOCAL_STATE (relative to the repository root `$root` unless absolute; default .local/dev).
state_show=${LOCAL_STATE:-.local/dev}
state=$state_show
[[ $state == /* ]] || state="$root/$state"
