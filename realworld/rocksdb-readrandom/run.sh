#!/usr/bin/env bash
# RocksDB 7.8 db_bench: THREADS reader threads doing random point reads of
# a small database that fits the block cache, which is RocksDB's lock-free
# HyperClockCache (the default LRU cache takes a shard mutex per lookup).
# db_bench is its own bounded load: it stops after LOAD_SECONDS.
. "$REALWORLD/lib.sh"

do_setup() {
	db_bench --benchmarks=fillseq --db="$WORK/db" --num=200000 --value_size=100 \
		--compression_type=none >"$OUT/fill.log" 2>&1
}
do_start() {
	exec db_bench --benchmarks=readrandom --use_existing_db=1 --db="$WORK/db" --num=200000 \
		--threads="$THREADS" --duration="$LOAD_SECONDS" --cache_size=268435456 --cache_type=hyper_clock_cache \
		--statistics=1 --stats_level=4 --histogram=1 --stats_dump_period_sec=5
}
do_ready() { kill -0 "$SERVER_PID"; }
do_load() { exec sleep "$LOAD_SECONDS"; }
do_pids() { echo "$SERVER_PID"; }
do_truth() { rw_rocksdb_stats; }

rw_main "$@"
