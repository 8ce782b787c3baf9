#!/usr/bin/env bash
# RocksDB 7.8 db_bench: THREADS writer threads inserting random keys into
# one database (WAL on, no sync): every write joins RocksDB's write queue.
# db_bench is its own bounded load: it stops after LOAD_SECONDS.
. "$REALWORLD/lib.sh"

do_start() {
	exec db_bench --benchmarks=fillrandom --db="$WORK/db" --num=100000000 \
		--threads="$THREADS" --duration="$LOAD_SECONDS" --value_size=100 \
		--compression_type=none --statistics=1 --stats_level=4 --histogram=1 --stats_dump_period_sec=5
}
do_ready() { kill -0 "$SERVER_PID"; }
do_load() { exec sleep "$LOAD_SECONDS"; }
do_pids() { echo "$SERVER_PID"; }
# RocksDB's own statistics, dumped into the database's LOG every 5 s: the
# last dump's mutex, write-path and stall counters.
do_truth() {
	sleep 6
	awk '/STATISTICS:/ {buf=""} {buf=buf $0 "\n"} END {printf "%s", buf}' "$WORK/db/LOG" |
		grep -E 'db.mutex.wait|write.self|write.other|write.wal|wal.synced|wal.bytes|stall|number.keys.(read|written)|block.cache.(hit|miss) |db.get.micros|db.write.micros|get.hit.l0|memtable.(hit|miss)' |
		sed 's/^/  /'
	grep -E 'Cumulative writes|Cumulative WAL|Cumulative stall|Interval writes|Interval stall' "$WORK/db/LOG" | tail -5 | sed 's/^/  /'
}

rw_main "$@"
