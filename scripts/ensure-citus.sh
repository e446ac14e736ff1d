#!/usr/bin/env bash
# Make a 3-node Citus cluster ready on this machine for RETRACT's Citus work (issue 18):
#   coordinator  127.0.0.1:9700  PostgreSQL 15 cluster 15/citus-coord
#   worker 1     127.0.0.1:9701  PostgreSQL 15 cluster 15/citus-w1
#   worker 2     127.0.0.1:9702  PostgreSQL 15 cluster 15/citus-w2
# each with shared_preload_libraries = 'citus' and pgvector, and both workers registered with the
# coordinator (in the `postgres` database, which is where this script checks the cluster's health).
#
# Citus is built from the vendored source (../shared/vendor/citus-13.2.2.tar.gz plus the one-line
# PostgreSQL 15.20 fix, see ../shared/vendor/README.md), because neither Debian nor npm carries it.
# The main cluster 15/main on 5432 is never touched: installing the extension's files changes no
# running cluster, and Citus loads only where shared_preload_libraries names it.
#
# Idempotent: when everything is already in place it only checks (a few seconds). After a reboot the
# clusters exist but are stopped; it starts them. Runs as root (CI and sessions are root).
#
# Usage:
#   bash scripts/ensure-citus.sh                        # build/install if needed, start, register
#   bash scripts/ensure-citus.sh --new-database         # ... and create a new empty database on all
#                                                       # three nodes (citus + vector, workers
#                                                       # registered); its URL is the last line printed
#   bash scripts/ensure-citus.sh --drop-database NAME   # drop a database made by --new-database
#   bash scripts/ensure-citus.sh --stop                 # stop the three clusters (data kept)
set -euo pipefail

PGVER=15
PGBIN=/usr/lib/postgresql/$PGVER/bin
PG_CONFIG=$PGBIN/pg_config
CITUS_VERSION=13.2.2
HOST=127.0.0.1
COORD_PORT=9700
# name:port of every node, coordinator first.
NODES=("citus-coord:$COORD_PORT" "citus-w1:$((COORD_PORT + 1))" "citus-w2:$((COORD_PORT + 2))")
WORKERS=("${NODES[@]:1}")

REPO=$(cd "$(dirname "$0")/.." && pwd)
VENDOR=${RETRACT_VENDOR_DIR:-$REPO/../shared/vendor}
TARBALL=$VENDOR/citus-$CITUS_VERSION.tar.gz
PATCH=$VENDOR/citus-$CITUS_VERSION-pg15.20.patch
# The build dependencies, from ../shared/vendor/README.md: PGXS links against what `pg_config --libs`
# lists (selinux, zstd, lz4, xslt, pam, gssapi_krb5), and Citus' columnar storage uses lz4 and zstd.
# libcurl is left out on purpose: Citus uses it only to phone home anonymous statistics, which these
# machines cannot reach anyway (configure --without-libcurl).
BUILD_DEPS=(build-essential postgresql-server-dev-$PGVER liblz4-dev libzstd-dev libkrb5-dev
            libselinux1-dev libxslt1-dev libpam0g-dev)
export DEBIAN_FRONTEND=noninteractive
# This script's own psql connections skip TLS (loopback; the handshake is most of a connection's cost).
export PGSSLMODE=disable
APT_OPTS=(-y -q -o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)

log() { echo "ensure-citus: $*" >&2; }
die() { echo "ensure-citus: FAILED: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root"

MODE=ensure
DROP_NAME=
case "${1:-}" in
  "") ;;
  --new-database) MODE=new ;;
  --drop-database) MODE=drop; DROP_NAME=${2:-}; [[ "$DROP_NAME" =~ ^retract_citus_[a-z0-9_]+$ ]] \
                     || die "--drop-database takes a name made by --new-database (retract_citus_…)" ;;
  --stop) MODE=stop ;;
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) die "unknown argument '$1' (see --help)" ;;
esac

# Two callers at once (CI and a test run, two sessions) must not build or create clusters twice.
# (The servers this script starts must not inherit the lock's descriptor, or they would hold it for
# as long as they run: every pg_ctlcluster below closes it, `9>&-`.)
exec 9>/var/lock/retract-ensure-citus.lock
flock 9

node_name() { echo "${1%%:*}"; }
node_port() { echo "${1##*:}"; }
# psql as the superuser over TCP; the clusters trust loopback (see write_config).
psql_at() { local port=$1; shift; psql -X -q -v ON_ERROR_STOP=1 -h "$HOST" -p "$port" -U postgres "$@"; }
psql_val() { local port=$1; shift; psql_at "$port" -A -t "$@"; }

# ---------------------------------------------------------------------------------------------
# Build and install
# ---------------------------------------------------------------------------------------------

# Installed means: the library is there, its compiled-in version string is this release, and the
# extension's control file is there. (Checked on the file, not on a running server, so that a
# different installed Citus is replaced rather than loaded.)
citus_installed() {
  local libdir sharedir
  libdir=$("$PG_CONFIG" --pkglibdir 2>/dev/null) || return 1
  sharedir=$("$PG_CONFIG" --sharedir 2>/dev/null) || return 1
  [ -f "$libdir/citus.so" ] && [ -f "$sharedir/extension/citus.control" ] \
    && grep -aq "Citus $CITUS_VERSION" "$libdir/citus.so"
}

install_build_deps() {
  local need=() p
  for p in "${BUILD_DEPS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
  done
  [ ${#need[@]} -eq 0 ] && return 0
  log "installing build dependencies: ${need[*]}"
  apt-get "${APT_OPTS[@]}" update >/dev/null || die "apt-get update failed"
  # --no-install-recommends: only what the build needs. Nothing here upgrades postgresql-15 itself
  # (postgresql-server-dev-15 is pinned by version to the installed server), so 5432 keeps running.
  apt-get "${APT_OPTS[@]}" install --no-install-recommends "${need[@]}" >/dev/null \
    || die "apt-get install ${need[*]} failed"
}

build_citus() {
  [ -f "$TARBALL" ] || die "vendored source not found: $TARBALL"
  [ -f "$PATCH" ] || die "compatibility patch not found: $PATCH"
  install_build_deps
  [ -x "$PG_CONFIG" ] || die "$PG_CONFIG missing (postgresql-server-dev-$PGVER)"

  local work start
  work=$(mktemp -d /tmp/citus-build.XXXXXX)
  # Build output never stays behind (and never lands in the repository).
  trap 'rm -rf "$work"' EXIT
  start=$(date +%s)
  log "building Citus $CITUS_VERSION in $work (log: $work/build.log)"
  tar -xzf "$TARBALL" -C "$work"
  local src=$work/citus-$CITUS_VERSION
  patch -d "$src" -p1 --forward --quiet < "$PATCH" >>"$work/build.log" 2>&1 \
    || { tail -n 20 "$work/build.log" >&2; die "applying $(basename "$PATCH") failed"; }
  # nice: other engineers run their tests on this 2-core machine while this compiles.
  # with_llvm=no: skip the LLVM bitcode for JIT inlining (about half the build time, and RETRACT's
  # short OLTP statements never reach the JIT thresholds); PGXS reads it from the make command line.
  ( cd "$src" \
    && nice -n 15 ./configure PG_CONFIG="$PG_CONFIG" --without-libcurl \
    && nice -n 15 make -j2 with_llvm=no \
    && make install with_llvm=no ) >>"$work/build.log" 2>&1 \
    || { tail -n 40 "$work/build.log" >&2; die "building Citus failed"; }
  log "built and installed Citus $CITUS_VERSION in $(( $(date +%s) - start )) s"
  rm -rf "$work"
  trap - EXIT
}

# ---------------------------------------------------------------------------------------------
# The three clusters
# ---------------------------------------------------------------------------------------------

# pg_lsclusters costs half a second on a loaded machine: read it once per run (refresh_status).
CLUSTERS=
refresh_status() { CLUSTERS=$(pg_lsclusters --no-header 2>/dev/null || true); }
cluster_status() { awk -v v="$PGVER" -v n="$1" '$1==v && $2==n {print $4}' <<<"$CLUSTERS"; }

# The settings this script owns, in a conf.d file of their own (Debian clusters include conf.d).
# Returns 0 when the file changed (the cluster then needs a restart to load them).
write_config() {
  local name=$1 port=$2 confdir=/etc/postgresql/$PGVER/$1
  local want
  want=$(cat <<EOF
# Written by RETRACT scripts/ensure-citus.sh; a run that finds it different rewrites it and restarts the cluster.
listen_addresses = '$HOST'
port = $port
shared_preload_libraries = 'citus'
# Citus commits a transaction that wrote to several nodes with two-phase commit.
max_prepared_transactions = 200
# Enough for the coordinator's connections to each worker on top of the clients'.
max_connections = 200
# Citus runs a maintenance daemon per database on every node, a background worker each: a test run holds
# one database per test file at once.
max_worker_processes = 128
EOF
)
  # Loopback only, trusted, like the machine's main cluster: Citus opens its own connections between
  # nodes as the session's current user (postgres, or retract_app once a transaction takes that role), so every node
  # must admit every role without a password. A production cluster would use scram and
  # pg_dist_authinfo instead; these clusters never listen beyond 127.0.0.1.
  local hba
  hba=$(printf '%s\n' '# Written by RETRACT scripts/ensure-citus.sh: loopback only, trusted.' \
          'local all all trust' 'host all all 127.0.0.1/32 trust' 'host all all ::1/128 trust')
  local changed=1
  mkdir -p "$confdir/conf.d"
  if [ "$(cat "$confdir/conf.d/retract-citus.conf" 2>/dev/null)" != "$want" ]; then
    printf '%s\n' "$want" > "$confdir/conf.d/retract-citus.conf"; changed=0
  fi
  if [ "$(cat "$confdir/pg_hba.conf" 2>/dev/null)" != "$hba" ]; then
    printf '%s\n' "$hba" > "$confdir/pg_hba.conf"; changed=0
  fi
  chown -R postgres:postgres "$confdir"
  return $changed
}

wait_ready() {
  local port=$1 i
  for i in $(seq 1 60); do
    pg_isready -q -h "$HOST" -p "$port" && return 0
    sleep 0.5
  done
  die "no answer on $HOST:$port after 30 s (see /var/log/postgresql/postgresql-$PGVER-*.log)"
}

ensure_node_up() {
  local name=$1 port=$2 status
  status=$(cluster_status "$name")
  if [ -z "$status" ]; then
    # A port already in use by something else would make the new cluster fail confusingly later.
    ! pg_isready -q -h "$HOST" -p "$port" || die "port $port is in use by something that is not cluster $PGVER/$name"
    log "creating cluster $PGVER/$name on port $port"
    # --start-conf=manual: the machine's boot does not start these three; this script does, when
    # something asks for Citus. Data lives in Debian's usual place, /var/lib/postgresql/15/<name>.
    pg_createcluster "$PGVER" "$name" --port "$port" --start-conf=manual >/dev/null \
      || die "pg_createcluster $PGVER $name failed"
    status=down
  fi
  if write_config "$name" "$port" && [ "$status" = online ]; then
    log "settings of $PGVER/$name changed, restarting it"
    pg_ctlcluster --skip-systemctl-redirect "$PGVER" "$name" restart 9>&- || die "restarting $PGVER/$name failed"
  elif [ "$status" != online ]; then
    log "starting $PGVER/$name (was $status)"
    pg_ctlcluster --skip-systemctl-redirect "$PGVER" "$name" start 9>&- \
      || die "starting $PGVER/$name failed (see /var/log/postgresql/postgresql-$PGVER-$name.log)"
  else
    return 0  # online with unchanged settings: database_ready below is the check
  fi
  wait_ready "$port"
}

# Makes database $1 a Citus database on every node and registers the workers with the coordinator.
# Citus keeps its node list per database, so each database is set up on its own.
setup_database() {
  local db=$1 n port
  for n in "${NODES[@]}"; do
    port=$(node_port "$n")
    psql_at "$port" -d "$db" -c "CREATE EXTENSION IF NOT EXISTS citus" -c "CREATE EXTENSION IF NOT EXISTS vector" \
      || die "creating extensions citus and vector in $db on port $port failed"
  done
  # The coordinator must know its own address before workers are added, so that workers (which
  # receive the metadata) can reach it back.
  psql_at "$COORD_PORT" -d "$db" -c "SELECT citus_set_coordinator_host('$HOST', $COORD_PORT)" >/dev/null
  for n in "${WORKERS[@]}"; do
    port=$(node_port "$n")
    psql_at "$COORD_PORT" -d "$db" -c "SELECT citus_add_node('$HOST', $port)
      WHERE NOT EXISTS (SELECT 1 FROM pg_dist_node WHERE nodename = '$HOST' AND nodeport = $port)" >/dev/null \
      || die "registering worker $HOST:$port in $db failed"
  done
}

# True when database $1 on the coordinator runs this Citus with both workers active.
database_ready() {
  local db=$1 ports got
  ports=$(for n in "${WORKERS[@]}"; do node_port "$n"; done | paste -sd,)
  got=$(psql_val "$COORD_PORT" -d "$db" -c "
    SELECT (SELECT extversion FROM pg_extension WHERE extname = 'citus') IS NOT NULL
       AND (SELECT extversion FROM pg_extension WHERE extname = 'vector') IS NOT NULL
       AND citus_version() LIKE 'Citus $CITUS_VERSION %'
       AND (SELECT count(*) FROM pg_dist_node
             WHERE nodename = '$HOST' AND nodeport IN ($ports) AND isactive AND noderole = 'primary') = ${#WORKERS[@]}
       -- and every node answers the coordinator and has both extensions in this database
       AND (SELECT count(*) FROM run_command_on_all_nodes(
             \$\$SELECT count(*) FROM pg_extension WHERE extname IN ('citus', 'vector')\$\$)
             WHERE success AND result = '2') = ${#NODES[@]}" \
    2>/dev/null || true)
  [ "$got" = t ]
}

# Every node reaches every other one (citus_check_cluster_node_health runs the checks from each node).
cluster_healthy() {
  local bad
  bad=$(psql_val "$COORD_PORT" -d "$1" -c "SELECT count(*) FROM citus_check_cluster_node_health() WHERE result IS NOT TRUE") \
    || return 1
  [ "$bad" = 0 ]
}

stop_all() {
  local n
  for n in "${NODES[@]}"; do
    if [ "$(cluster_status "$(node_name "$n")")" = online ]; then
      pg_ctlcluster --skip-systemctl-redirect "$PGVER" "$(node_name "$n")" stop 9>&-
    fi
  done
  log "stopped"
}

drop_database() {
  local db=$1 n
  # Workers first: the coordinator's copy holds the metadata that names them.
  for n in "${WORKERS[@]}" "${NODES[0]}"; do
    psql_at "$(node_port "$n")" -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
  done
  log "dropped $db on every node"
}

# ---------------------------------------------------------------------------------------------

if [ "$MODE" = stop ]; then refresh_status; stop_all; exit 0; fi

# pgvector for PostgreSQL 15 is installed by scripts/ensure-postgres.sh (built from Debian's source
# package); these clusters use the same installation.
[ -f "$("$PG_CONFIG" --sharedir 2>/dev/null)/extension/vector.control" ] \
  || die "pgvector is not installed for PostgreSQL $PGVER: run scripts/ensure-postgres.sh first"

if ! citus_installed; then
  build_citus
  citus_installed || die "Citus $CITUS_VERSION still not found after make install"
fi

refresh_status
for n in "${NODES[@]}"; do ensure_node_up "$(node_name "$n")" "$(node_port "$n")"; done

if ! database_ready postgres; then
  log "setting up Citus in database postgres on every node"
  setup_database postgres
  database_ready postgres || die "Citus in database postgres is not ready after setup"
fi

if [ "$MODE" = drop ]; then drop_database "$DROP_NAME"; exit 0; fi

if [ "$MODE" = new ]; then
  db=retract_citus_$(date -u +%Y%m%d%H%M%S)_$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
  for n in "${NODES[@]}"; do
    psql_at "$(node_port "$n")" -d postgres -c "CREATE DATABASE $db" >/dev/null
  done
  setup_database "$db"
  database_ready "$db" || die "new database $db is not ready"
  cluster_healthy "$db" || die "new database $db: some node cannot reach another (citus_check_cluster_node_health)"
  log "created $db on every node: citus $(psql_val "$COORD_PORT" -d "$db" -c "SELECT extversion FROM pg_extension WHERE extname='citus'"), vector $(psql_val "$COORD_PORT" -d "$db" -c "SELECT extversion FROM pg_extension WHERE extname='vector'")"
  echo "postgres://postgres@$HOST:$COORD_PORT/$db"
  exit 0
fi

echo "ensure-citus: Citus $CITUS_VERSION up: coordinator $HOST:$COORD_PORT, workers $(for n in "${WORKERS[@]}"; do printf '%s:%s ' "$HOST" "$(node_port "$n")"; done)(PostgreSQL $PGVER, pgvector)"
