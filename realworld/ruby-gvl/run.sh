#!/usr/bin/env bash
# Ruby 3.1: a thread-per-connection HTTP server (gvl.rb) with THREADS
# keep-alive clients, so THREADS Ruby threads want the global VM lock.
. "$REALWORLD/lib.sh"

do_start() { exec ruby "$SCENARIO_DIR/gvl.rb" "$PORT"; }
do_ready() { rw_port_open "$PORT"; }
do_load() { rw_ab "http://127.0.0.1:$PORT/page" "$THREADS"; }
do_pids() { echo "$SERVER_PID"; }

rw_main "$@"
