# Helpers shared by the scenarios' run.sh. Each run.sh defines do_STEP
# functions and ends with `rw_main "$@"`; the runner
# (fixtures/cmd/realworld) calls the steps with WORK (a temp dir removed
# afterwards), OUT (where logs and results stay), SCENARIO_DIR, PORT,
# PORT2, … and LOAD_SECONDS (how long the load must last) set, and from
# the start on SERVER_PID, the process run.sh start exec'd.
#
#   setup  prepare data in $WORK (optional)
#   start  exec the program in the foreground (it is stopped by signal)
#   ready  exit 0 once the program serves
#   load   a bounded load against 127.0.0.1 that stops by itself
#   pids   print the process ids to record, comma-separated
#   truth  print the program's own view of its waits (optional; ground truth)
set -euo pipefail

rw_main() {
	local step=${1:?step}
	if declare -F "do_$step" >/dev/null; then
		"do_$step"
		return
	fi
	case $step in
	setup | truth) ;;
	*)
		echo "run.sh: no step $step" >&2
		exit 2
		;;
	esac
}

# rw_port_open PORT: is something listening on 127.0.0.1:PORT?
rw_port_open() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# rw_ab URL CONCURRENCY [ab options…]: HTTP load with ApacheBench on
# keep-alive connections, bounded by LOAD_SECONDS and a request count
# (-n after -t: -t alone caps the run at 50,000 requests).
rw_ab() {
	local url=$1 conc=$2
	shift 2
	# --foreground keeps timeout in the script's process group, which the
	# harness kills at the end, also when rw_ab runs in the background.
	exec timeout --foreground "$LOAD_SECONDS" ab -q -k -r -s 30 -c "$conc" -t "$LOAD_SECONDS" -n 100000000 "$@" "$url"
}

# rw_rocksdb_stats: RocksDB's own statistics, which db_bench's
# --stats_dump_period_sec=5 dumps into the database's LOG: the last dump's
# mutex, write-path and stall counters and the DB stats' write-group lines.
rw_rocksdb_stats() {
	sleep 6
	awk '/STATISTICS:/ {buf=""} {buf=buf $0 "\n"} END {printf "%s", buf}' "$WORK/db/LOG" |
		grep -E 'db.mutex.wait|write.self|write.other|write.wal|wal.synced|wal.bytes|stall|number.keys.(read|written)|block.cache.(hit|miss) |db.get.micros|db.write.micros|memtable.(hit|miss)' |
		sed 's/^/  /'
	grep -E 'Cumulative writes|Cumulative WAL|Cumulative stall|Interval writes|Interval stall' "$WORK/db/LOG" | tail -5 | sed 's/^/  /'
}

# rw_go_states URL: a Go server's own view of its goroutines: the debug=2
# dump at URL kept in $OUT/truth-goroutines.txt, and goroutines counted by
# wait state.
rw_go_states() {
	local dump="$OUT/truth-goroutines.txt"
	curl -sf "$1" -o "$dump"
	echo "  goroutine dump: $(grep -c '^goroutine ' "$dump") goroutines ($dump)"
	grep -oE '^goroutine [0-9]+ \[[^],]*' "$dump" | sed 's/.*\[//' | sort | uniq -c | sort -rn |
		sed 's/^/  goroutines in state /'
}

# rw_idle_load URL: the load of an idle server: one request a second for
# LOAD_SECONDS, so the program is alive and polled but never busy.
rw_idle_load() {
	local end=$((SECONDS + LOAD_SECONDS))
	while ((SECONDS < end)); do
		curl -s -o /dev/null "$1" || true
		sleep 1
	done
}
