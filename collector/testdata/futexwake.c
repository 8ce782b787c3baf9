// futexwake: measures the cost of a non-blocking futex call. Each round
// makes COUNT FUTEX_WAKE calls on a private futex word nobody waits on and
// prints the mean time per call, so a benchmark can compare rounds with
// and without probes attached. ns_per_call is the thread's CPU time (user
// and system, which includes the probes' time), robust to other load on
// the machine; wall_ns_per_call is elapsed time.
//
// Prints "pid=P", then "round=I ns_per_call=X wall_ns_per_call=Y" per
// round.
// Usage: futexwake [count-per-round] [rounds]  (rounds 0: forever)
#define _GNU_SOURCE
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int word;

static double now_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

__attribute__((noinline)) void wake_nobody(long count)
{
	for (long i = 0; i < count; i++)
		syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

int main(int argc, char **argv)
{
	long count = argc > 1 ? atol(argv[1]) : 1000000;
	long rounds = argc > 2 ? atol(argv[2]) : 0;
	printf("pid=%d\n", getpid());
	fflush(stdout);
	for (long r = 0; rounds == 0 || r < rounds; r++) {
		double c0 = now_ns(CLOCK_THREAD_CPUTIME_ID), w0 = now_ns(CLOCK_MONOTONIC);
		wake_nobody(count);
		double c1 = now_ns(CLOCK_THREAD_CPUTIME_ID), w1 = now_ns(CLOCK_MONOTONIC);
		printf("round=%ld ns_per_call=%.1f wall_ns_per_call=%.1f\n", r, (c1 - c0) / count, (w1 - w0) / count);
		fflush(stdout);
	}
	return 0;
}
