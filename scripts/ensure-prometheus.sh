#!/usr/bin/env bash
# Make Debian's Prometheus (the `prometheus` and `promtool` binaries) available for RETRACT's metrics tests:
# test/server/metrics-scrape.test.ts starts a Prometheus of its own on a free loopback port, and
# test/docs/alerts.test.ts runs `promtool check rules` / `promtool test rules` on docs/prometheus/.
# Idempotent: when both binaries are on PATH this only prints the version.
# The package's own service (a system Prometheus on :9090) is never left running: its start is refused while
# the package installs (policy-rc.d), and it is stopped and disabled afterwards should it have started anyway.
# Runs as root (CI and sessions are root).
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
APT_OPTS=(-y -q -o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
POLICY=/usr/sbin/policy-rc.d

log() { echo "ensure-prometheus: $*" >&2; }
die() { echo "ensure-prometheus: FAILED: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root"

# Stop and disable the system service the package ships, whatever the init system.
stop_system_service() {
  if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
    systemctl disable --now prometheus.service >/dev/null 2>&1 || true
  fi
  if [ -x /etc/init.d/prometheus ]; then
    /etc/init.d/prometheus stop >/dev/null 2>&1 || true
    command -v update-rc.d >/dev/null && update-rc.d prometheus disable >/dev/null 2>&1 || true
  fi
  # A daemon started by the package runs as the `prometheus` user with the package's config; ours never do.
  pkill -u prometheus -x prometheus 2>/dev/null || true
}

did="already present"
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  log "prometheus or promtool missing, installing Debian's prometheus"
  # Refuse the package's service start during the install unless the machine already refuses all (containers).
  made_policy=0
  if [ ! -e "$POLICY" ]; then
    printf '#!/bin/sh\n# RETRACT scripts/ensure-prometheus.sh, removed when it ends\ncase "$1" in prometheus*) exit 101;; esac\nexit 0\n' > "$POLICY"
    chmod 0755 "$POLICY"
    made_policy=1
    trap 'rm -f "$POLICY"' EXIT
  fi
  apt-get "${APT_OPTS[@]}" update >/dev/null || die "apt-get update failed"
  # No recommends: they pull prometheus-node-exporter, another service.
  apt-get "${APT_OPTS[@]}" install --no-install-recommends prometheus >/dev/null || die "apt-get install prometheus failed"
  if [ "$made_policy" = 1 ]; then rm -f "$POLICY"; trap - EXIT; fi
  stop_system_service
  command -v prometheus >/dev/null || die "prometheus installed but not on PATH"
  command -v promtool >/dev/null || die "prometheus installed but promtool is not on PATH"
  did="installed; its system service is not running"
fi

ver=$(prometheus --version 2>&1 | head -n1) || die "prometheus --version failed"
echo "ensure-prometheus: $ver ($did)"
