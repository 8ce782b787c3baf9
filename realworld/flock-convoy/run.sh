#!/usr/bin/env bash
# util-linux's flock(1) serialising WRITERS shell loops: each loop runs
# `flock -x convoy.lock -c 'echo … >> convoy.log'` again and again until
# LOAD_SECONDS pass, the way cron jobs and deploy scripts keep one copy of
# a command at a time. flock(1) opens the lock file, sleeps in flock(2)
# with LOCK_EX until the holder's flock(1) exits, runs the short append
# through sh -c and exits, which releases the lock to the next waiter.
# flock(1) runs through a symlink named rwflock, so that its comm (what
# `contend record --comm` selects, scenario.json's comm) is this
# scenario's and not that of any other flock(1) on the machine.
. "$REALWORLD/lib.sh"

do_setup() {
	mkdir -p "$WORK/bin"
	ln -s "$(command -v flock)" "$WORK/bin/rwflock"
	: >"$WORK/convoy.lock"
	: >"$WORK/convoy.log"
}
# The loops; this shell waits for them all.
do_start() {
	local w end=$((SECONDS + LOAD_SECONDS))
	for ((w = 1; w <= WRITERS; w++)); do
		(
			n=0
			while ((SECONDS < end)); do
				"$WORK/bin/rwflock" -x "$WORK/convoy.lock" -c "echo writer $w line $n >>'$WORK/convoy.log'"
				n=$((n + 1))
			done
		) &
	done
	wait
}
do_ready() { [ -s "$WORK/convoy.log" ]; }
do_load() { exec sleep "$LOAD_SECONDS"; }
# What the ground truth's tools attach to: the loops (contend records the
# rwflock processes by name, scenario.json's comm).
do_pids() { pgrep -P "$SERVER_PID" -x bash | paste -sd,; }
# The kernel's view of the lock and the program's own figure: /proc/locks
# on the lock file's inode (the FLOCK holder and the waiters queued
# behind it, "->" lines) and the rwflock processes' wchan, sampled every
# 0.1 s for 5 s; the lines appended meanwhile.
do_truth() {
	local ino i p w before after
	ino=$(stat -c %i "$WORK/convoy.lock")
	before=$(wc -l <"$WORK/convoy.log")
	for i in $(seq 50); do
		echo "holders $(grep ":$ino " /proc/locks | grep -vc -- '->')"
		echo "waiters $(grep ":$ino " /proc/locks | grep -c -- '->')"
		for p in $(pgrep -g "$SERVER_PID" -x rwflock); do
			w=$(cat /proc/"$p"/wchan 2>/dev/null) && echo "wchan $w"
		done
		sleep 0.1
	done | sort | uniq -c | sort -rn | sed 's/^/  samples /'
	after=$(wc -l <"$WORK/convoy.log")
	echo "  lines appended in ~5 s: $((after - before)) (critical sections; total $after)"
	echo "  /proc/locks on the lock file (inode $ino) at the end:"
	grep ":$ino " /proc/locks | sed 's/^/    /' || true
}

rw_main "$@"
