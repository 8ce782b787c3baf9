#!/usr/bin/env bash
# InfluxDB 1.6 (Go, TSM engine): CONC concurrent HTTP writers in CLIENTS
# clients, each client POSTing its own batch of 500 points over 500 series
# of its own hosts into one database, WAL fsync on every write
# (wal-fsync-delay 0). pprof is on the HTTP port.
#
# Every writer passes the one WAL; only a client's own writers share its
# series' cache entries. With all 32 writers posting one batch of 50
# series, the entries' RWMutexes (tsm1.(*entry).add) took about as much
# of the runtime's block profile as the WAL's (7 s against 3-4 s in one
# run, the reverse in another), so which lock led depended on the disk's
# fsync latency of the day.
. "$REALWORLD/lib.sh"

do_setup() {
	cat >"$WORK/influxdb.conf" <<CONF
reporting-disabled = true
bind-address = "127.0.0.1:$PORT2"
[meta]
  dir = "$WORK/meta"
[data]
  dir = "$WORK/data"
  wal-dir = "$WORK/wal"
  wal-fsync-delay = "0s"
  query-log-enabled = false
[monitor]
  store-enabled = false
[http]
  bind-address = "127.0.0.1:$PORT"
  log-enabled = false
  pprof-enabled = true
[ifql]
  enabled = false
[continuous_queries]
  enabled = false
CONF
	local c i
	for c in $(seq 0 $((CLIENTS - 1))); do
		for i in $(seq 0 499); do
			echo "cpu,host=c${c}h$i,region=r$((i % 5)) usage=$i.5,idle=$((i * 3)).25 $((1600000000000000000 + i))"
		done >"$WORK/batch-$c.txt"
	done
}
do_start() { exec influxd run -config "$WORK/influxdb.conf"; }
do_ready() { curl -sf -o /dev/null "http://127.0.0.1:$PORT/ping"; }
do_load() {
	curl -sf -XPOST "http://127.0.0.1:$PORT/query" --data-urlencode "q=CREATE DATABASE rw" >/dev/null
	local c
	for c in $(seq 0 $((CLIENTS - 1))); do
		(rw_ab "http://127.0.0.1:$PORT/write?db=rw" $((CONC / CLIENTS)) -p "$WORK/batch-$c.txt" -T text/plain) &
	done
	wait
}
do_pids() { echo "$SERVER_PID"; }
do_truth() { rw_go_states "http://127.0.0.1:$PORT/debug/pprof/goroutine?debug=2"; }

rw_main "$@"
