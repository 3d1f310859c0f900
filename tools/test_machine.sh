#!/usr/bin/env bash
# What `make test` needs on the machine, set up when missing: PostgreSQL on 127.0.0.1:5432 with
# trust auth for local connections (the catalog's and Airflow's PostgreSQL tests), Redis on
# 127.0.0.1:6379 (the Celery test's broker), Debian's chromium with a CJK font (the browser tests),
# Ceph's radosgw, ceph-mon and ceph-osd (tests/radosgw.py starts them: the real S3 server), and
# docker-compose (tests/test_docker_compose.py validates docker-compose.yaml with it), and a
# throwaway certificate where Kueue's manager reads its metrics certificate from
# (/etc/kueue/metrics/certs, a fixed path when Kueue does not manage its certificates itself,
# as tests/k8s_kueue.py runs it; its metrics server stays off).
#
# Packages come from Debian (apt-get, as root). Without root, the script says in one line what to
# install and stops. The servers it starts are this machine's test services: PostgreSQL gets a
# cluster of its own (initdb --auth=trust) under a folder of its own, so the system's clusters and
# their pg_hba.conf are left alone; both servers listen on loopback only and keep running for the
# next `make test`.
set -euo pipefail

PG_PORT=5432
REDIS_PORT=6379
STATE="${OCTOTRAIN_TEST_SERVICES_DIR:-/var/lib/octotrain-test}"
[ "$(id -u)" -eq 0 ] || STATE="${XDG_CACHE_HOME:-$HOME/.cache}/octotrain/test-services"

say() { printf 'test machine: %s\n' "$*"; }

missing_packages() {
  local wanted=()
  compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || wanted+=(postgresql)
  command -v redis-server >/dev/null || wanted+=(redis-server)
  command -v chromium >/dev/null || wanted+=(chromium)
  dpkg -s fonts-wqy-microhei >/dev/null 2>&1 || wanted+=(fonts-wqy-microhei)
  command -v radosgw >/dev/null || wanted+=(radosgw)
  command -v ceph-mon >/dev/null || wanted+=(ceph-mon)
  command -v ceph-osd >/dev/null || wanted+=(ceph-osd)
  if ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null; then
    wanted+=(docker-compose)
  fi
  echo "${wanted[@]}"
}

install_packages() {
  local wanted
  wanted="$(missing_packages)"
  [ -n "$wanted" ] || return 0
  if [ "$(id -u)" -ne 0 ]; then
    say "missing Debian packages; install them and run again: sudo apt-get install -y $wanted" >&2
    exit 1
  fi
  say "installing $wanted"
  apt-get update -qq
  # shellcheck disable=SC2086 # one word per package
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $wanted >/dev/null
  # Debian's package starts its own cluster where it can; ours is the one on 127.0.0.1:5432.
  if command -v pg_ctlcluster >/dev/null; then
    for cluster in /etc/postgresql/*/main; do
      [ -d "$cluster" ] || continue
      version="$(basename "$(dirname "$cluster")")"
      pg_ctlcluster --skip-systemctl-redirect "$version" main stop >/dev/null 2>&1 || true
    done
  fi
}

as_owner() {  # PostgreSQL refuses to run as root: root runs it as the package's postgres user.
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start_postgres() {
  if pg_isready -h 127.0.0.1 -p "$PG_PORT" -q 2>/dev/null; then return 0; fi
  local bin data
  bin="$(dirname "$(ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n 1)")"
  data="$STATE/postgres-$(basename "$(dirname "$bin")")"
  mkdir -p "$data"
  [ "$(id -u)" -ne 0 ] || chown postgres: "$data" && chmod 700 "$data"
  if [ ! -f "$data/PG_VERSION" ]; then
    say "making a PostgreSQL cluster with trust auth in $data"
    as_owner "$bin/initdb" -D "$data" -U postgres --auth=trust --no-sync >/dev/null
  fi
  say "starting PostgreSQL on 127.0.0.1:$PG_PORT"
  as_owner "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -c unix_socket_directories=$data -c max_connections=200" \
    start >/dev/null
}

start_redis() {
  if redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1; then return 0; fi
  mkdir -p "$STATE/redis"
  say "starting Redis on 127.0.0.1:$REDIS_PORT"
  redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
    --dir "$STATE/redis" --logfile "$STATE/redis/server.log"
  for _ in $(seq 100); do
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  say "Redis did not answer on 127.0.0.1:$REDIS_PORT; see $STATE/redis/server.log" >&2
  exit 1
}

kueue_metrics_certificate() {
  local certs=/etc/kueue/metrics/certs
  [[ -s $certs/tls.crt && -s $certs/tls.key ]] && return 0
  say "making a throwaway certificate in $certs (Kueue's manager reads it at start)"
  mkdir -p "$certs"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=kueue-metrics \
    -keyout "$certs/tls.key" -out "$certs/tls.crt" 2>/dev/null
}

install_packages
mkdir -p "$STATE"
start_postgres
start_redis
kueue_metrics_certificate
