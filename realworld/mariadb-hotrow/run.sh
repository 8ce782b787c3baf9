#!/usr/bin/env bash
# MariaDB 10.11 (InnoDB): CLIENTS connections of mariadb-slap all updating
# one row, autocommit, innodb_flush_log_at_trx_commit=FLUSH_AT_COMMIT on a disk-backed
# data dir. One process, a thread per connection.
. "$REALWORLD/lib.sh"

sql() { mariadb --no-defaults -h 127.0.0.1 -P "$PORT" -u root -N -B "$@"; }

do_setup() {
	install -d -o mysql -g mysql "$WORK/data" "$WORK/run"
	mariadb-install-db --no-defaults --datadir="$WORK/data" --user=mysql \
		--auth-root-authentication-method=normal --skip-test-db >/dev/null
}
do_start() {
	exec mariadbd --no-defaults --datadir="$WORK/data" --user=mysql \
		--bind-address=127.0.0.1 --port="$PORT" --socket="$WORK/run/mysqld.sock" \
		--pid-file="$WORK/run/mysqld.pid" --skip-log-bin --innodb-buffer-pool-size=128M \
		--innodb-flush-log-at-trx-commit="$FLUSH_AT_COMMIT" --max-connections=200 --performance-schema=ON
}
do_ready() { mariadb-admin --no-defaults -h 127.0.0.1 -P "$PORT" -u root ping >/dev/null 2>&1; }
do_load() {
	local rows=${HOT_ROWS:-1} values i
	values=$(for i in $(seq "$rows"); do printf '(%d, 0),' "$i"; done)
	sql -e "CREATE DATABASE IF NOT EXISTS rw; CREATE TABLE IF NOT EXISTS rw.hot (id INT PRIMARY KEY, v BIGINT) ENGINE=InnoDB; REPLACE INTO rw.hot VALUES ${values%,};"
	# One row: every client on id 1. HOT_ROWS rows (the remedy): each
	# update picks one at random, the id drawn once per statement into a
	# variable (RAND() in the WHERE clause would be drawn per row scanned).
	local query="UPDATE hot SET v = v + 1 WHERE id = 1"
	if [ "$rows" -gt 1 ]; then
		query="SET @r = 1 + FLOOR(RAND() * $rows); UPDATE hot SET v = v + 1 WHERE id = @r"
	fi
	exec timeout "$LOAD_SECONDS" mariadb-slap --no-defaults -h 127.0.0.1 -P "$PORT" -u root \
		--create-schema=rw --concurrency="$CLIENTS" --iterations=1 --number-of-queries=100000000 \
		--delimiter=";" --query="$query"
}
do_pids() { echo "$SERVER_PID"; }
# InnoDB's own view: row-lock waits from SHOW GLOBAL STATUS over the
# window, transactions in LOCK WAIT sampled from INNODB_TRX, and the
# performance_schema synchronisation waits (enabled for the window).
do_truth() {
	sql -e "UPDATE performance_schema.setup_instruments SET ENABLED='YES', TIMED='YES' WHERE NAME LIKE 'wait/synch/%' OR NAME LIKE 'wait/io/file/%'; TRUNCATE performance_schema.events_waits_summary_global_by_event_name"
	local s0 s1 i
	s0=$(sql -e "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_row_lock_waits','Innodb_row_lock_time','Com_update','Innodb_os_log_fsyncs','Innodb_data_fsyncs')")
	for i in $(seq 20); do
		sql -e "SELECT trx_state, count(*) FROM information_schema.INNODB_TRX GROUP BY trx_state"
		sleep 0.25
	done | awk '{n[$1" "$2]+=$NF; c[$1" "$2]++} END {for (k in n) printf "  INNODB_TRX: %s: %.1f transactions on average over %d samples\n", k, n[k]/c[k], c[k]}'
	s1=$(sql -e "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_row_lock_waits','Innodb_row_lock_time','Com_update','Innodb_os_log_fsyncs','Innodb_data_fsyncs')")
	join <(echo "$s0" | sort) <(echo "$s1" | sort) | awk '{printf "  status delta over the window: %s %d\n", $1, $3-$2}'
	echo "  performance_schema waits over the window (event, count, total ms):"
	sql -e "SELECT EVENT_NAME, COUNT_STAR, ROUND(SUM_TIMER_WAIT/1e9) FROM performance_schema.events_waits_summary_global_by_event_name WHERE COUNT_STAR > 0 ORDER BY SUM_TIMER_WAIT DESC LIMIT 12" | sed 's/^/    /'
	echo "  a row-lock wait as INNODB_LOCK_WAITS shows it (requesting lock, blocking lock, blocking trx state):"
	sql -e "SELECT r.lock_table, r.lock_index, r.lock_mode, b.lock_mode, t.trx_state, t.trx_operation_state FROM information_schema.INNODB_LOCK_WAITS w JOIN information_schema.INNODB_LOCKS r ON r.lock_id = w.requested_lock_id JOIN information_schema.INNODB_LOCKS b ON b.lock_id = w.blocking_lock_id JOIN information_schema.INNODB_TRX t ON t.trx_id = w.blocking_trx_id LIMIT 3" | sed 's/^/    /'
}

rw_main "$@"
