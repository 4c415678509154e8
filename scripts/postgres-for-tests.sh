#!/usr/bin/env bash
# A private PostgreSQL server for Quintet's tests of the PostgreSQL checkpoint store.
#
#   scripts/postgres-for-tests.sh [start] [DATA_DIR] [PORT]   install if missing, start (or find running), print the connection string
#   scripts/postgres-for-tests.sh stop DATA_DIR               stop the server of DATA_DIR (fast shutdown) if it runs
#
# start is idempotent: the server of DATA_DIR that already runs is reused. DATA_DIR defaults to
# $QUINTET_TEST_POSTGRES_DIR or <temp>/quintet-postgres-tests; PORT to the first free one from 54329 (a reused server keeps
# its own). The server listens on 127.0.0.1 only, with trust authentication for the superuser "quintet": it is for tests,
# never for data that matters. The last line on standard output is the connection string; progress goes to standard error.
# PostgreSQL refuses to run as root, so as root the server runs as the "postgres" user (created by Debian's package).
set -euo pipefail

say() { echo "postgres-for-tests: $*" >&2; }
fail() { say "$*"; exit 1; }

command=start
if [[ "${1:-}" == "start" || "${1:-}" == "stop" ]]; then
  command=$1
  shift
fi

data_dir=${1:-${QUINTET_TEST_POSTGRES_DIR:-${TMPDIR:-/tmp}/quintet-postgres-tests}}
requested_port=${2:-}

find_bin_dir() {
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [[ -x "$dir/initdb" && -x "$dir/pg_ctl" && -x "$dir/postgres" ]]; then
      echo "$dir"
      return 0
    fi
  done
  return 1
}

# Runs a PostgreSQL program as the server's owner.
as_owner() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

bin_dir=$(find_bin_dir || true)

if [[ "$command" == "stop" ]]; then
  [[ -n "$bin_dir" ]] || exit 0
  if [[ -f "$data_dir/postmaster.pid" ]]; then
    as_owner "$bin_dir/pg_ctl" -D "$data_dir" -m fast -w -t 60 stop >&2 || true
  fi
  exit 0
fi

if [[ -z "$bin_dir" ]]; then
  if [[ $(id -u) -ne 0 ]]; then
    fail "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb) and installing it needs root: run 'sudo apt-get install -y postgresql', then run this again."
  fi
  command -v apt-get >/dev/null || fail "PostgreSQL is not installed and there is no apt-get to install it with; install PostgreSQL 13 or newer so that /usr/lib/postgresql/*/bin/initdb exists."
  say "installing Debian's postgresql package"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 || fail "apt-get update failed; PostgreSQL cannot be installed."
  apt-get install -y -qq postgresql >&2 || fail "apt-get install -y postgresql failed."
  bin_dir=$(find_bin_dir) || fail "postgresql was installed but no /usr/lib/postgresql/*/bin/initdb was found."
fi

if [[ $(id -u) -eq 0 ]] && ! id postgres >/dev/null 2>&1; then
  # Debian's package creates this user; a hand-built install may not have.
  useradd --system --home-dir /var/lib/postgresql --shell /usr/sbin/nologin postgres
fi

port_of_running() {
  # The fourth line of postmaster.pid is the port the server listens on.
  sed -n 4p "$data_dir/postmaster.pid" 2>/dev/null
}

print_connection_string() {
  echo "Host=127.0.0.1;Port=$1;Username=quintet;Database=postgres"
}

if [[ -f "$data_dir/postmaster.pid" ]] && as_owner "$bin_dir/pg_ctl" -D "$data_dir" status >/dev/null 2>&1; then
  port=$(port_of_running)
  say "reusing the server of $data_dir on port $port"
  print_connection_string "$port"
  exit 0
fi

if [[ ! -f "$data_dir/PG_VERSION" ]]; then
  say "creating a cluster in $data_dir"
  mkdir -p "$data_dir"
  if [[ $(id -u) -eq 0 ]]; then
    chown postgres: "$data_dir"
    # The server's user must be able to reach its folder, also under a private temp folder.
    parent=$(dirname "$data_dir")
    while [[ "$parent" != "/" ]]; do
      chmod o+x "$parent" 2>/dev/null || true
      parent=$(dirname "$parent")
    done
  fi
  chmod 700 "$data_dir"
  as_owner "$bin_dir/initdb" -D "$data_dir" -U quintet --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null 2>"$data_dir.initdb.log" \
    || as_owner "$bin_dir/initdb" -D "$data_dir" -U quintet --auth=trust --encoding=UTF8 --locale=C >/dev/null 2>>"$data_dir.initdb.log" \
    || fail "initdb failed in $data_dir: $(cat "$data_dir.initdb.log")"
  rm -f "$data_dir.initdb.log"
fi

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_on() {
  # The socket lives in the data folder, so that no system folder (/var/run/postgresql) is needed.
  as_owner "$bin_dir/pg_ctl" -D "$data_dir" -l "$data_dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -c port=$1 -c unix_socket_directories='$data_dir' -c max_connections=200 -c shared_buffers=32MB" \
    start >/dev/null
}

if [[ -n "$requested_port" ]]; then
  start_on "$requested_port" || fail "the server did not start on port $requested_port; see $data_dir/server.log:
$(tail -n 20 "$data_dir/server.log" 2>/dev/null)"
  port=$requested_port
else
  port=""
  for candidate in $(seq 54329 54429); do
    port_free "$candidate" || continue
    if start_on "$candidate"; then
      port=$candidate
      break
    fi
  done
  [[ -n "$port" ]] || fail "the server did not start on any port from 54329 to 54429; see $data_dir/server.log:
$(tail -n 20 "$data_dir/server.log" 2>/dev/null)"
fi

say "started the server of $data_dir on port $port (pid $(head -n 1 "$data_dir/postmaster.pid"))"
print_connection_string "$port"
