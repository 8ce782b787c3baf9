#!/usr/bin/env bash
# PostgreSQL 15 with pgbench: CLIENTS connections all updating one row
# (aid = 1 of pgbench_accounts), synchronous commit on a disk-backed data
# dir. One backend process per connection: the target is every backend.
. "$REALWORLD/lib.sh"

PGBIN=/usr/lib/postgresql/15/bin
as_pg() { setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; }
psql_() { psql -X -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -Atq "$@"; }

do_setup() {
	install -d -o postgres -g postgres "$WORK/pgdata" "$WORK/sock"
	as_pg "$PGBIN/initdb" -D "$WORK/pgdata" -U postgres --auth=trust -E UTF8 >/dev/null
}
do_start() {
	exec setpriv --reuid=postgres --regid=postgres --init-groups -- "$PGBIN/postgres" -D "$WORK/pgdata" \
		-c listen_addresses=127.0.0.1 -p "$PORT" -c unix_socket_directories="$WORK/sock" \
		-c max_connections=200 -c shared_buffers=128MB -c synchronous_commit=on -c fsync=on \
		-c track_io_timing=on
}
do_ready() { "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"; }
do_load() {
	"$PGBIN/pgbench" -h 127.0.0.1 -p "$PORT" -U postgres -i -s 1 -q postgres >/dev/null 2>&1
	echo 'UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = 1;' >"$WORK/hotrow.sql"
	exec timeout "$LOAD_SECONDS" "$PGBIN/pgbench" -h 127.0.0.1 -p "$PORT" -U postgres -n \
		-f "$WORK/hotrow.sql" -c "$CLIENTS" -j 2 -T "$LOAD_SECONDS" postgres
}
# Every client backend of the pgbench connections.
do_pids() {
	ps --ppid "$SERVER_PID" -o pid=,args= | awk '/postgres: postgres postgres 127\.0\.0\.1/ {print $1}' | paste -sd,
}
# pg_stat_activity's wait events of the client backends, sampled every
# 0.25 s, and the ungranted locks in pg_locks.
do_truth() {
	local i
	for i in $(seq 20); do
		psql_ -c "SELECT coalesce(wait_event_type,'CPU') || ':' || coalesce(wait_event,'running') FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
		sleep 0.25
	done | sort | uniq -c | sort -rn | sed 's/^/  pg_stat_activity samples /'
	echo "  ungranted pg_locks (locktype, mode, waiting backends) at the end:"
	psql_ -c "SELECT locktype, mode, count(*) FROM pg_locks WHERE NOT granted GROUP BY 1,2 ORDER BY 3 DESC" | sed 's/^/    /'
	echo "  what the waiters' blockers were doing (pg_blocking_pids):"
	psql_ -c "SELECT coalesce(b.wait_event_type,'CPU') || ':' || coalesce(b.wait_event,'running'), count(*) FROM pg_stat_activity w, unnest(pg_blocking_pids(w.pid)) bp JOIN pg_stat_activity b ON b.pid = bp GROUP BY 1 ORDER BY 2 DESC" | sed 's/^/    /'
	echo "  pg_stat_wal (syncs and their time since start):"
	psql_ -c "SELECT wal_records, wal_sync, round(wal_sync_time) || ' ms' FROM pg_stat_wal" | sed 's/^/    /'
}

rw_main "$@"
