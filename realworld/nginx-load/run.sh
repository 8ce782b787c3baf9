#!/usr/bin/env bash
# nginx 1.22: a master and 2 event-loop worker processes serving a small
# static page to ab with CONC keep-alive connections. No locks on the
# request path: the workers are single-threaded and share nothing hot.
. "$REALWORLD/lib.sh"

do_setup() {
	mkdir -p "$WORK/html" "$WORK/tmp"
	head -c 2048 /dev/zero | tr '\0' 'x' >"$WORK/html/index.html"
	cat >"$WORK/nginx.conf" <<CONF
daemon off;
worker_processes 2;
pid $WORK/nginx.pid;
error_log $WORK/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $WORK/tmp;
    proxy_temp_path $WORK/tmp;
    fastcgi_temp_path $WORK/tmp;
    uwsgi_temp_path $WORK/tmp;
    scgi_temp_path $WORK/tmp;
    server {
        listen 127.0.0.1:$PORT;
        root $WORK/html;
    }
}
CONF
}
do_start() { exec nginx -c "$WORK/nginx.conf" -p "$WORK"; }
do_ready() { rw_port_open "$PORT"; }
do_load() { rw_ab "http://127.0.0.1:$PORT/index.html" "$CONC"; }
# The master and its workers.
do_pids() { { echo "$SERVER_PID"; pgrep -P "$SERVER_PID"; } | paste -sd,; }

rw_main "$@"
