#!/usr/bin/env bash
# Debian's Chromium for the browser tests (Playwright drives it; never `playwright install`).
set -u
if [ -x /usr/bin/chromium ]; then exit 0; fi
echo "installing Debian's chromium for the browser tests"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null && apt-get install -y -qq chromium >/dev/null
[ -x /usr/bin/chromium ] || { echo "chromium could not be installed"; exit 1; }
