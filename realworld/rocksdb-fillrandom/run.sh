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
do_truth() { rw_rocksdb_stats; }

rw_main "$@"
