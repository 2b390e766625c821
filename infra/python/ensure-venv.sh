#!/usr/bin/env bash
# Usage: infra/python/ensure-venv.sh NAME
#
# Makes sure the venv .local/venv/NAME exists and holds exactly what infra/python/NAME.txt
# pins, so local tooling never depends on (or pollutes) the machine's Python packages. Cheap
# when nothing changed: the sha256 of the requirements file is stamped inside the venv and pip
# only runs when it differs.
#
# The venvs are shared by every clone on this machine: .local/venv/NAME is a link to
# ${XDG_CACHE_HOME:-~/.cache}/follow-seckill/venv/NAME-<key> (VENV_CACHE_DIR overrides the
# folder), where the key is the requirements file's sha256 and the interpreter's version. A
# fresh clone then links the venv an earlier clone installed instead of installing the SAM CLI,
# cfn-lint, moto and schemathesis again (over a minute each). A venv is never changed once
# stamped, so a clone whose pins differ gets its own; the 3 newest of each NAME are kept.
# VENV_CACHE=off keeps the venv inside the clone, as a plain folder.
#
# Environment: PYTHON  interpreter to build the venv from (default python3).
# Stdout stays empty; one progress line and any pip error go to stderr.
set -euo pipefail

if [[ $# -ne 1 || ! $1 =~ ^[A-Za-z0-9_.-]+$ ]]; then
    echo "usage: $0 NAME   (installs infra/python/NAME.txt into .local/venv/NAME)" >&2
    exit 2
fi
name=$1

# Resolve the repository from this script's location so any cwd works.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
requirements="$here/$name.txt"
link="$root/.local/venv/$name"
python=${PYTHON:-python3}
keep=3

if [[ ! -f $requirements ]]; then
    echo "ensure-venv: no requirements file infra/python/$name.txt" >&2
    exit 2
fi
if ! command -v "$python" >/dev/null 2>&1; then
    echo "ensure-venv: $python not found; install Python 3 (>= 3.10) or set PYTHON" >&2
    exit 1
fi

want=$("$python" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$requirements")

# The python check catches a venv whose base interpreter was removed or upgraded.
is_current() {
    [[ -f $1/.requirements.sha256 && "$(cat "$1/.requirements.sha256")" == "$want" ]] &&
        "$1/bin/python" -c '' >/dev/null 2>&1
}

# Installs the requirements into the venv at $1 (made first when it has no pip), under a lock
# ($2): two callers (say a dev server and a test run, or two clones) never pip into it at once.
install() {
    local venv=$1 lock=$2 log
    mkdir -p "$(dirname "$lock")"
    # flock is Linux-only; elsewhere we accept that small risk.
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$lock"
        flock 9
        if is_current "$venv"; then
            return 0
        fi
    fi
    echo "installing $name into ${venv#"$root/"} ..." >&2
    # A venv without pip is one whose creation was interrupted (ensurepip runs last): made again.
    if ! "$venv/bin/python" -c 'import pip' >/dev/null 2>&1; then
        rm -rf "$venv"
        # Debian and Ubuntu ship python3 without ensurepip; venv creation needs python3-venv.
        if ! "$python" -c 'import ensurepip' >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
            # shellcheck source=infra/apt-install.sh
            . "$root/infra/apt-install.sh"
            # A failure shows in the venv creation below, with apt-get's output above it.
            apt_install python3-venv || true
        fi
        if ! "$python" -m venv "$venv" >&2; then
            rm -rf "$venv"
            echo "ensure-venv: '$python -m venv' failed" >&2
            exit 1
        fi
    fi
    # Drop the stamp first so an interrupted install is retried next time.
    rm -f "$venv/.requirements.sha256"
    log=$(mktemp)
    if ! "$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q \
        -r "$requirements" >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        echo "ensure-venv: pip install -r infra/python/$name.txt failed ($("$venv/bin/python" --version 2>&1))" >&2
        exit 1
    fi
    rm -f "$log"
    echo "$want" >"$venv/.requirements.sha256"
}

if [[ ${VENV_CACHE:-on} == off ]]; then
    # A link left by the shared layout is replaced by a folder of the clone's own.
    [[ ! -L $link ]] || rm -f "$link"
    is_current "$link" || install "$link" "$root/.local/venv/.$name.lock"
    exit 0
fi

if [[ -L $link ]] && is_current "$link"; then
    exit 0
fi
cache=${VENV_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/follow-seckill/venv}
interpreter=$("$python" -c 'import sys; print(sys.version)')
key=$(printf '%s\n%s\n' "$want" "$interpreter" | sha256sum | cut -c1-16)
shared="$cache/$name-$key"
is_current "$shared" || install "$shared" "$cache/.$name-$key.lock"
touch "$shared"
mkdir -p "$(dirname "$link")"
# A folder from before the venvs were shared (or from VENV_CACHE=off) gives way to the link.
[[ -L $link || ! -e $link ]] || rm -rf "$link"
ln -sfn "$shared" "$link"
# The newest $keep venvs of this NAME stay; a clone linked to an older one installs it again.
find "$cache" -mindepth 1 -maxdepth 1 -type d -name "$name-*" -printf '%T@ %p\n' |
    sort -rn | tail -n "+$((keep + 1))" | cut -d' ' -f2- |
    while IFS= read -r old; do rm -rf "$old"; done
