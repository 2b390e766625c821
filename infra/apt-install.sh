# shellcheck shell=bash
# Sourced by the scripts that install a missing OS package on Debian or Ubuntu.
#
# apt_install PACKAGE: installs PACKAGE with apt-get (through sudo unless root), quietly;
# on failure prints apt-get's output on stderr and returns non-zero.
apt_install() {
    local package=$1 sudo="" apt_log status=0
    [[ $(id -u) -ne 0 ]] && sudo="sudo"
    echo "installing $package with apt-get ..." >&2
    apt_log=$(mktemp)
    { $sudo env DEBIAN_FRONTEND=noninteractive apt-get update &&
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$package"; } \
        >"$apt_log" 2>&1 || status=$?
    [[ $status -eq 0 ]] || cat "$apt_log" >&2
    rm -f "$apt_log"
    return "$status"
}
