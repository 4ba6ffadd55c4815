#!/bin/sh
# Install Debian's Chromium for the browser tests when it is missing (CI starts from a fresh machine).
# playwright-core drives it through executablePath; it never downloads a browser of its own.
set -eu
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
/usr/bin/chromium --version
