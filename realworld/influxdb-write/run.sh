#!/usr/bin/env bash
# InfluxDB 1.6 (Go, TSM engine): CONC concurrent HTTP writers, each POST a
# batch of 500 points over 50 series into one database, WAL fsync on
# every write (wal-fsync-delay 0). pprof is on the HTTP port.
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
	local i
	for i in $(seq 0 499); do
		echo "cpu,host=h$((i % 50)),region=r$((i % 5)) usage=$i.5,idle=$((i * 3)).25 $((1600000000000000000 + i))"
	done >"$WORK/batch.txt"
}
do_start() { exec influxd run -config "$WORK/influxdb.conf"; }
do_ready() { curl -sf -o /dev/null "http://127.0.0.1:$PORT/ping"; }
do_load() {
	curl -sf -XPOST "http://127.0.0.1:$PORT/query" --data-urlencode "q=CREATE DATABASE rw" >/dev/null
	rw_ab "http://127.0.0.1:$PORT/write?db=rw" "$CONC" -p "$WORK/batch.txt" -T text/plain
}
do_pids() { echo "$SERVER_PID"; }
do_truth() { rw_go_states "http://127.0.0.1:$PORT/debug/pprof/goroutine?debug=2"; }

rw_main "$@"
