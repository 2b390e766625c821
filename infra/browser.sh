#!/usr/bin/env bash
# Makes sure Debian's chromium and chromium-driver are installed, for the browser tests
# (the live dashboard's), installing them from the OS packages on first use: Playwright's
# and Puppeteer's own browser downloads are not reachable here, Debian's mirror is.
#
#   infra/browser.sh    # exits 0 when chromium and chromedriver are on PATH afterwards
#
# infra/run-with-emulators.sh runs it before the tests. A failure is reported, not fatal
# there: only the browser tests need chromium, and they fail with this reason.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

have() { command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; }

have && exit 0
# shellcheck source=infra/apt-install.sh
. "$root/infra/apt-install.sh"
for package in chromium chromium-driver; do
    apt_install "$package" || {
        echo "browser.sh: apt-get install $package failed; the browser tests will fail" >&2
        exit 1
    }
done
have || {
    echo "browser.sh: chromium or chromedriver is still not on PATH after installing" >&2
    exit 1
}
echo "browser.sh: $(chromium --version 2>/dev/null | head -n 1) and chromedriver installed" >&2
