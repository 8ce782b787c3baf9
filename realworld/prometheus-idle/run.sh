#!/usr/bin/env bash
# Prometheus 2.42 with an empty scrape configuration: an idle Go server,
# the negative control. The "load" is a health check every second.
# Prometheus enables the mutex and block profiles itself
# (runtime.SetMutexProfileFraction(20), SetBlockProfileRate(20)).
. "$REALWORLD/lib.sh"

do_setup() {
	cat >"$WORK/prometheus.yml" <<CONF
global:
  scrape_interval: 15s
  evaluation_interval: 15s
scrape_configs: []
CONF
}
do_start() {
	exec prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/data" \
		--web.listen-address="127.0.0.1:$PORT" --log.level=warn
}
do_ready() { curl -sf -o /dev/null "http://127.0.0.1:$PORT/-/ready"; }
do_load() { rw_idle_load "http://127.0.0.1:$PORT/-/healthy"; }
do_pids() { echo "$SERVER_PID"; }
do_truth() { rw_go_states "http://127.0.0.1:$PORT/debug/pprof/goroutine?debug=2"; }

rw_main "$@"
