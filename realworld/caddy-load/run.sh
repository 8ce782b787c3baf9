#!/usr/bin/env bash
# Caddy 2.6 (Go) serving a 2 KB static file to ab with CONC keep-alive
# connections. The admin endpoint (PORT2) serves /debug/pprof.
. "$REALWORLD/lib.sh"

export XDG_DATA_HOME="$WORK/data" XDG_CONFIG_HOME="$WORK/config" HOME="$WORK"

do_setup() {
	mkdir -p "$WORK/html"
	head -c 2048 /dev/zero | tr '\0' 'x' >"$WORK/html/index.html"
	cat >"$WORK/Caddyfile" <<CONF
{
	admin 127.0.0.1:$PORT2
	auto_https off

}
http://127.0.0.1:$PORT {
	root * $WORK/html
	file_server
}
CONF
}
do_start() { exec caddy run --config "$WORK/Caddyfile" --adapter caddyfile; }
do_ready() { rw_port_open "$PORT" && curl -sf -o /dev/null "http://127.0.0.1:$PORT2/debug/pprof/"; }
do_load() { rw_ab "http://127.0.0.1:$PORT/index.html" "$CONC"; }
do_pids() { echo "$SERVER_PID"; }
do_truth() { rw_go_states "http://127.0.0.1:$PORT2/debug/pprof/goroutine?debug=2"; }

rw_main "$@"
