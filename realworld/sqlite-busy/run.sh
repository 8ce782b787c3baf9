#!/usr/bin/env bash
# SQLite 3.40's command-line shell, WRITERS processes at once, each
# running short write transactions (BEGIN IMMEDIATE; one INSERT; COMMIT)
# against one database file in rollback-journal mode with
# synchronous=FULL: every commit fsyncs the journal and the database
# while it holds the file's lock. A writer that finds the lock taken gets
# SQLITE_BUSY from a non-blocking fcntl(F_SETLK) and, with `.timeout
# BUSY_MS`, SQLite's busy handler sleeps (1, 2, 5, … up to 100 ms) and
# tries again: the waiters poll. Each writer stops after LOAD_SECONDS or
# its TXNS transactions, whichever comes first.
. "$REALWORLD/lib.sh"

TXNS=${TXNS:-100000}

do_setup() {
	sqlite3 "$WORK/bench.db" 'PRAGMA journal_mode=DELETE; CREATE TABLE t(id INTEGER PRIMARY KEY, writer INTEGER, v TEXT);' >/dev/null
	{
		echo ".timeout $BUSY_MS"
		echo "PRAGMA synchronous=FULL;"
		local i
		for ((i = 0; i < TXNS; i++)); do
			echo "BEGIN IMMEDIATE; INSERT INTO t(writer, v) VALUES(\$w, hex(randomblob(64))); COMMIT;"
		done
	} >"$WORK/writer.sql"
}
# The writers, each sqlite3 reading its transactions from the script;
# this shell waits for them all.
do_start() {
	local w
	for ((w = 1; w <= WRITERS; w++)); do
		sed "s/\\\$w/$w/" "$WORK/writer.sql" | timeout --foreground "$LOAD_SECONDS" sqlite3 "$WORK/bench.db" >/dev/null &
	done
	wait
}
do_ready() { [ "$(pgrep -x -g "$SERVER_PID" sqlite3 | wc -l)" -ge "$WRITERS" ]; }
do_load() { exec sleep "$LOAD_SECONDS"; }
do_pids() { pgrep -x -g "$SERVER_PID" sqlite3 | paste -sd,; }
# rows SQL: a query of the database opened immutable, without taking its
# lock: a reader that polls the lock with the writers may lose to them for
# its whole timeout, and would add a poller to the queue it measures. A
# read torn by a commit in progress says so.
rows() { sqlite3 -readonly "file:$WORK/bench.db?immutable=1" "$1" 2>/dev/null || echo "(read torn by a commit)"; }
count_rows() { rows 'SELECT count(*) FROM t' | grep -E '^[0-9]+$' || echo 0; }
# SQLite's own count (rows committed, per writer) and the kernel's view of
# the database's locks: /proc/locks (the holder's POSIX lock on the
# lock bytes at 1 GiB) and each writer's wchan, sampled every 0.25 s.
do_truth() {
	local dev ino i p
	read -r dev ino < <(stat -c '%D %i' "$WORK/bench.db")
	local before after
	before=$(count_rows)
	for i in $(seq 20); do
		for p in $(pgrep -x -g "$SERVER_PID" sqlite3); do
			echo "wchan $(cat /proc/"$p"/wchan 2>/dev/null || echo gone)"
		done
		echo "locks-on-db $(grep -c ":$ino " /proc/locks)"
		sleep 0.25
	done | sort | uniq -c | sort -rn | sed 's/^/  samples /'
	after=$(count_rows)
	echo "  rows committed in ~5 s: $((after - before)) (total $after)"
	echo "  rows per writer so far (writers absent committed none):"
	rows 'SELECT writer, count(*) FROM t GROUP BY writer' | sed 's/^/    /'
	echo "  /proc/locks on the database (inode $ino) now:"
	grep ":$ino " /proc/locks | sed 's/^/    /' || true
}

rw_main "$@"
