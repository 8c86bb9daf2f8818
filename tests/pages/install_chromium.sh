#!/usr/bin/env bash
# Install Debian's Chromium (and fonts for its screenshots) for tests/workflow/test_pages.py (the pages and reports
# looked at in a real browser). No browser is downloaded from anywhere else.
#
#   sudo tests/pages/install_chromium.sh     # prints the browser's path
#
# Exit status: 0 = Chromium is there (installed now or before); 3 = this machine does not allow it
# (not root, no apt-get, Debian's packages not reachable); 1 = it should have worked but failed.
set -euo pipefail

say() { printf 'install_chromium: %s\n' "$*" >&2; }
cannot() { say "cannot install Chromium here: $*"; exit 3; }

for name in chromium chromium-browser; do
    if found=$(command -v "$name"); then
        echo "$found"
        exit 0
    fi
done
[[ $(id -u) == 0 ]] || cannot "must run as root (it installs a Debian package)"
command -v apt-get >/dev/null || cannot "needs apt-get (Debian/Ubuntu)"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
apt-get update -qq </dev/null >"$log" 2>&1 \
    || { tail -5 "$log" >&2; cannot "apt-get update failed: Debian package archives not reachable"; }
apt-get install -y -qq --no-install-recommends chromium fonts-liberation fonts-dejavu-core </dev/null >"$log" 2>&1 \
    || { tail -5 "$log" >&2; cannot "apt-get install chromium failed"; }
found=$(command -v chromium) || { say "ERROR: chromium installed but not on the PATH"; exit 1; }
echo "$found"
