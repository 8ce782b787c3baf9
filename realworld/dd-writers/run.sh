#!/usr/bin/env bash
# GNU dd from coreutils, WRITERS shell loops each running
# `dd if=/dev/zero of=shared.dat bs=1M count=MIB conv=notrunc` again and
# again until LOAD_SECONDS pass: concurrent writers of one file, the way
# several jobs fill or rewrite one image or log. Each write(2) to the
# ext4 file takes the file's inode lock (i_rwsem) for the copy into the
# page cache, so the writers queue on it; conv=notrunc overwrites the
# same MIB MiB, so the file and the dirty pages stay bounded. dd runs
# through a symlink named rwdd, so that its comm (scenario.json's comm,
# what `contend record --comm` selects) is this scenario's alone; each dd
# lives a few tens of milliseconds.
. "$REALWORLD/lib.sh"

do_setup() {
	mkdir -p "$WORK/bin"
	ln -s "$(command -v dd)" "$WORK/bin/rwdd"
}
# The loops, each appending dd's own summary line (bytes, seconds, rate)
# to stats.log (one short O_APPEND write a line, so lines do not mix);
# this shell waits for them all.
do_start() {
	local w end=$((SECONDS + LOAD_SECONDS))
	for ((w = 1; w <= WRITERS; w++)); do
		(
			while ((SECONDS < end)); do
				"$WORK/bin/rwdd" if=/dev/zero of="$WORK/shared.dat" bs=1M count="$MIB" conv=notrunc 2>&1 | tail -1 >>"$WORK/stats.log"
			done
		) &
	done
	wait
}
do_ready() { [ -s "$WORK/shared.dat" ]; }
do_load() { exec sleep "$LOAD_SECONDS"; }
# What the ground truth's tools attach to: the loops (contend records the
# rwdd processes by name).
do_pids() { pgrep -P "$SERVER_PID" -x bash | paste -sd,; }
# rwdd_wchans prints "wchan W" for every rwdd process, with bash's own
# reads and no fork: the loops keep both CPUs' run queues full, and a
# sampler that forks per process falls behind by seconds.
rwdd_wchans() {
	local f c w
	for f in /proc/[0-9]*/comm; do
		read -r c <"$f" 2>/dev/null || continue
		[ "$c" = rwdd ] || continue
		w=
		# wchan has no newline: read fills w and still returns 1.
		read -r w <"${f%comm}wchan" 2>/dev/null || [ -n "$w" ] || continue
		echo "wchan ${w:-running}"
	done
}
# The kernel's view and dd's own: the rwdd processes' wchan sampled every
# 0.25 s for 5 s (a writer asleep on the inode lock shows
# ext4_buffered_write_iter, where down_write is inlined), and the dd runs
# that finished meanwhile with the rate each reported.
do_truth() {
	local i before after
	before=$(wc -l <"$WORK/stats.log")
	for i in $(seq 20); do
		rwdd_wchans
		sleep 0.25
	done | sort | uniq -c | sort -rn | sed 's/^/  samples /'
	after=$(wc -l <"$WORK/stats.log")
	echo "  dd runs of $MIB MiB finished in ~5 s: $((after - before)) (all writers)"
	echo "  rates dd reported (MB/s: min, median, max over those runs):"
	tail -n "$((after - before))" "$WORK/stats.log" | grep -oE '[0-9.,]+ [MG]B/s' | tr , . |
		awk '{v=$1; if ($2=="GB/s") v*=1000; print v}' | sort -n |
		awk '{a[NR]=$1} END {if (NR) printf "    %.0f, %.0f, %.0f\n", a[1], a[int((NR+1)/2)], a[NR]}'
}

rw_main "$@"
