#!/usr/bin/env bash
# RocksDB 7.8 db_bench fillrandom with THREADS writer threads and the write
# queue's adaptive yield stretched to YIELD_USEC: a writer waiting for its
# turn calls sched_yield for up to YIELD_USEC before it parks (the default
# is 100 µs); ADAPTIVE_YIELD=false (the remedy) parks it at once.
# Otherwise as rocksdb-fillrandom: random keys into
# one database (WAL on, no sync): every write joins RocksDB's write queue.
# db_bench is its own bounded load: it stops after LOAD_SECONDS.
. "$REALWORLD/lib.sh"

do_start() {
	exec db_bench --benchmarks=fillrandom --db="$WORK/db" --num=100000000 \
		--threads="$THREADS" --duration="$LOAD_SECONDS" --value_size=100 \
		--compression_type=none --enable_write_thread_adaptive_yield="${ADAPTIVE_YIELD:-true}" \
		--write_thread_max_yield_usec="$YIELD_USEC" --write_thread_slow_yield_usec=1000000 --statistics=1 --stats_level=4 --histogram=1 --stats_dump_period_sec=5
}
do_ready() { kill -0 "$SERVER_PID"; }
do_load() { exec sleep "$LOAD_SECONDS"; }
do_pids() { echo "$SERVER_PID"; }
do_truth() { rw_rocksdb_stats; }

rw_main "$@"
