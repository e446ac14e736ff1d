#!/usr/bin/env bash
# Make the machine's PostgreSQL 15 ready for RETRACT: cluster running on
# 127.0.0.1:5432 and the pgvector extension installed (RETRACT's search is a
# pgvector HNSW cosine index). Idempotent: when both already hold it only checks
# and exits in about a second. Runs as root (CI and sessions are root).
#
# pgvector is not in Debian 12's archive, so when it is missing it is built from
# Debian's own `pgvector` source package in trixie: only a deb-src entry for
# trixie is added, and an apt pin forbids any trixie binary package.
set -euo pipefail

PGVER=15
PGHOST=127.0.0.1
PGPORT=5432
PG_CONFIG=/usr/lib/postgresql/$PGVER/bin/pg_config
CONTROL=/usr/share/postgresql/$PGVER/extension/vector.control
SRC_LIST=/etc/apt/sources.list.d/trixie-src.list
PIN_FILE=/etc/apt/preferences.d/trixie-src-only
export DEBIAN_FRONTEND=noninteractive
APT_OPTS=(-y -q -o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)

log() { echo "ensure-postgres: $*" >&2; }
die() { echo "ensure-postgres: FAILED: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root"

psql_pg() { psql -X -q -v ON_ERROR_STOP=1 -h "$PGHOST" -p "$PGPORT" -U postgres "$@"; }

cluster_ver() {
  # The directory under /etc/postgresql names the cluster version (15 here).
  local v
  v=$(ls /etc/postgresql 2>/dev/null | head -n1 || true)
  echo "${v:-$PGVER}"
}

ensure_cluster_up() {
  command -v pg_lsclusters >/dev/null || die "pg_lsclusters not found: PostgreSQL $PGVER is not installed"
  local ver status
  ver=$(cluster_ver)
  status=$(pg_lsclusters --no-header 2>/dev/null | awk -v v="$ver" '$1==v && $2=="main" {print $4}')
  [ -n "$status" ] || die "no PostgreSQL cluster $ver/main (pg_lsclusters shows none)"
  if [ "$status" != "online" ]; then
    log "cluster $ver/main is $status, starting it"
    pg_ctlcluster --skip-systemctl-redirect "$ver" main start \
      || die "pg_ctlcluster $ver main start failed (see /var/log/postgresql/postgresql-$ver-main.log)"
  fi
  local i
  for i in $(seq 1 60); do
    if pg_isready -q -h "$PGHOST" -p "$PGPORT"; then return 0; fi
    sleep 1
  done
  die "PostgreSQL not answering on $PGHOST:$PGPORT after 60 s (pg_isready)"
}

# True when `create extension vector` works, tried in a throwaway database so no
# real database is touched.
vector_works() {
  [ -f "$CONTROL" ] || return 1
  local db="ensure_pgvector_probe_$$"
  psql_pg -d postgres -c "drop database if exists $db" >/dev/null 2>&1 || true
  psql_pg -d postgres -c "create database $db" >/dev/null 2>&1 || return 1
  local ok=0
  psql_pg -d "$db" -c "create extension if not exists vector" >/dev/null 2>&1 || ok=1
  psql_pg -d postgres -c "drop database if exists $db" >/dev/null 2>&1 || true
  return $ok
}

vector_version() {
  sed -n "s/^default_version *= *'\(.*\)'.*/\1/p" "$CONTROL" 2>/dev/null | head -n1
}

debian_mirror() {
  # The host the machine's own Debian sources use (it may have no other way out).
  local uri
  uri=$(grep -hsE '^[[:space:]]*URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null \
          | awk '{print $2}' | grep -E '/debian/?$' | head -n1 || true)
  if [ -z "$uri" ]; then
    uri=$(grep -hsE '^[[:space:]]*deb[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
            | grep -v '\[.*\]' | awk '{print $2}' | grep -E '/debian/?$' | head -n1 || true)
  fi
  echo "${uri:-http://deb.debian.org/debian}" | sed 's:/*$::'
}

setup_trixie_src() {
  local mirror
  mirror=$(debian_mirror)
  # Source entries only: there is no `deb` line for trixie, and the pin below
  # makes sure no trixie binary could ever be chosen even if one were added.
  printf 'deb-src %s trixie main\n' "$mirror" > "$SRC_LIST"
  cat > "$PIN_FILE" <<'EOF'
Explanation: RETRACT scripts/ensure-postgres.sh: trixie is configured for deb-src only
Explanation: (to build pgvector); never install a trixie binary package.
Package: *
Pin: release n=trixie
Pin-Priority: -1
EOF
}

build_pgvector() {
  setup_trixie_src
  log "apt-get update"
  apt-get "${APT_OPTS[@]}" update >/dev/null || die "apt-get update failed"

  local need=()
  local p
  for p in postgresql-server-dev-$PGVER build-essential dpkg-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
  done
  if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    apt-get "${APT_OPTS[@]}" install --no-install-recommends "${need[@]}" >/dev/null \
      || die "apt-get install ${need[*]} failed"
    # Installing the server dev package can upgrade postgresql-$PGVER and restart the cluster.
    ensure_cluster_up
  fi
  [ -x "$PG_CONFIG" ] || die "$PG_CONFIG missing after installing postgresql-server-dev-$PGVER"

  WORK=$(mktemp -d /tmp/pgvector-build.XXXXXX)
  # apt drops to the _apt user to download; let it write here.
  chmod 0755 "$WORK"; chown _apt "$WORK" 2>/dev/null || true
  trap 'rm -rf "$WORK"' EXIT
  log "apt-get source pgvector (trixie) in $WORK"
  (cd "$WORK" && apt-get -q -o DPkg::Lock::Timeout=600 source pgvector >"$WORK/source.log" 2>&1) \
    || { cat "$WORK/source.log" >&2; die "apt-get source pgvector failed"; }
  local dir
  dir=$(find "$WORK" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*' | head -n1)
  [ -n "$dir" ] && [ -f "$dir/Makefile" ] || { cat "$WORK/source.log" >&2; die "no unpacked pgvector source in $WORK"; }

  # OPTFLAGS= : portable build (no -march=native), as Debian packages it.
  log "building $(basename "$dir")"
  (cd "$dir" && make -j"$(nproc)" PG_CONFIG="$PG_CONFIG" OPTFLAGS= >"$WORK/build.log" 2>&1 \
              && make install PG_CONFIG="$PG_CONFIG" OPTFLAGS= >>"$WORK/build.log" 2>&1) \
    || { tail -n 40 "$WORK/build.log" >&2; die "building pgvector failed"; }
}

ensure_cluster_up

if vector_works; then
  echo "ensure-postgres: PostgreSQL $PGVER up on $PGHOST:$PGPORT; pgvector $(vector_version) already present"
  exit 0
fi

log "pgvector missing or not loadable for PostgreSQL $PGVER: building it from Debian's trixie source package"
build_pgvector
ensure_cluster_up
vector_works || die "pgvector was built and installed but 'create extension vector' still fails"
echo "ensure-postgres: PostgreSQL $PGVER up on $PGHOST:$PGPORT; built and installed pgvector $(vector_version)"
