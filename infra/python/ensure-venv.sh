#!/usr/bin/env bash
# Usage: infra/python/ensure-venv.sh NAME
#
# Makes sure the project-local venv .local/venv/NAME exists and holds exactly what
# infra/python/NAME.txt pins, so local tooling never depends on (or pollutes) the
# machine's Python packages. Cheap when nothing changed: the sha256 of the requirements
# file is stamped inside the venv and pip only runs when it differs.
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
venv_rel=".local/venv/$name"
venv="$root/$venv_rel"
stamp="$venv/.requirements.sha256"
python=${PYTHON:-python3}

if [[ ! -f $requirements ]]; then
    echo "ensure-venv: no requirements file infra/python/$name.txt" >&2
    exit 2
fi
if ! command -v "$python" >/dev/null 2>&1; then
    echo "ensure-venv: $python not found; install Python 3 (>= 3.10) or set PYTHON" >&2
    exit 1
fi

sha256() {
    "$python" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$1"
}

venv_is_current() {
    # The python check catches a venv whose base interpreter was removed or upgraded.
    [[ -f $stamp && "$(cat "$stamp")" == "$(sha256 "$requirements")" ]] &&
        "$venv/bin/python" -c '' >/dev/null 2>&1
}

if venv_is_current; then
    exit 0
fi

mkdir -p "$root/.local/venv"
# Two callers (say a dev server and a test run) must not pip into the same venv at once;
# flock is Linux-only, elsewhere we accept that small risk.
if command -v flock >/dev/null 2>&1; then
    exec 9>"$root/.local/venv/.$name.lock"
    flock 9
    if venv_is_current; then
        exit 0
    fi
fi

echo "installing $name into $venv_rel ..." >&2

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
rm -f "$stamp"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q \
    -r "$requirements" >"$log" 2>&1; then
    cat "$log" >&2
    echo "ensure-venv: pip install -r infra/python/$name.txt failed ($("$venv/bin/python" --version 2>&1))" >&2
    exit 1
fi
sha256 "$requirements" >"$stamp"
