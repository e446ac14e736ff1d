#!/usr/bin/env bash
# Make Debian's Chromium available at /usr/bin/chromium for RETRACT's browser
# tests. Idempotent: when it is already installed this only prints its version.
# Runs as root (CI and sessions are root).
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
APT_OPTS=(-y -q -o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)

die() { echo "ensure-chromium: FAILED: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root"

did="already present"
if [ ! -x /usr/bin/chromium ]; then
  echo "ensure-chromium: /usr/bin/chromium missing, installing Debian's chromium" >&2
  apt-get "${APT_OPTS[@]}" update >/dev/null || die "apt-get update failed"
  apt-get "${APT_OPTS[@]}" install chromium >/dev/null || die "apt-get install chromium failed"
  [ -x /usr/bin/chromium ] || die "chromium installed but /usr/bin/chromium is missing"
  did="installed"
fi

ver=$(/usr/bin/chromium --version 2>/dev/null | head -n1) || die "/usr/bin/chromium --version failed"
[ -n "$ver" ] || die "/usr/bin/chromium --version printed nothing"
echo "ensure-chromium: $ver ($did)"
