#!/usr/bin/env bash
# A Chromium for the browser tests (Playwright drives it; never `playwright install`):
# $CHROMIUM when set, else Debian's /usr/bin/chromium, installed here with apt-get (as
# root) when it is missing. Elsewhere install Chromium yourself and set CHROMIUM=/path.
set -u
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ -x "$CHROMIUM" ]; then exit 0; fi
if [ "$CHROMIUM" != /usr/bin/chromium ] || ! command -v apt-get >/dev/null; then
  echo "chromium: $CHROMIUM is missing; install Chromium and set CHROMIUM=/path/to/chromium"
  exit 1
fi
echo "installing Debian's chromium for the browser tests"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null && apt-get install -y -qq chromium >/dev/null
[ -x /usr/bin/chromium ] || { echo "chromium could not be installed"; exit 1; }
