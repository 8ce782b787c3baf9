#!/usr/bin/env bash
# HAProxy 2.6 with 4 threads, a frontend that answers itself, and no
# traffic: an idle server, the negative control. The "load" is a health
# check every second, so the server is alive and polled but never busy.
. "$REALWORLD/lib.sh"

do_setup() {
	cat >"$WORK/haproxy.cfg" <<CONF
global
    nbthread 4
    pidfile $WORK/haproxy.pid
defaults
    mode http
    timeout client 10s
    timeout server 10s
    timeout connect 1s
frontend fe
    bind 127.0.0.1:$PORT
    http-request return status 200 content-type text/plain string ok
CONF
}
do_start() { exec haproxy -db -f "$WORK/haproxy.cfg"; }
do_ready() { rw_port_open "$PORT"; }
do_load() { rw_idle_load "http://127.0.0.1:$PORT/health"; }
do_pids() { echo "$SERVER_PID"; }

rw_main "$@"
