// twocallers: one thread sleeps, over and over, through two call paths
// whose frames lie at the same addresses and hold the same words except
// one return address two frames up (via_alpha or via_beta). Built with
// frame pointers, the kernel's stack walks from the two paths start from
// identical registers and identical first frame records: the collector's
// tests check that the per-thread stack cache still tells them apart.
// Each path runs twice in a row, so the cache also gets hits.
//
// Prints "pid=P".
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) static void block_here(void)
{
	struct timespec ts = {0, 2000000};
	syscall(SYS_nanosleep, &ts, NULL);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void middle(void)
{
	block_here();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void via_alpha(void)
{
	middle();
	__asm__ volatile("" ::: "memory");
}

// The nop keeps the compiler from folding via_beta into via_alpha.
__attribute__((noinline)) void via_beta(void)
{
	middle();
	__asm__ volatile("nop" ::: "memory");
}

// One call site in main for both paths (through this table), so that a
// path's frames repeat word for word: the return address into main is
// the same for every call.
static void (*volatile paths[4])(void) = {via_alpha, via_alpha, via_beta, via_beta};

int main(void)
{
	printf("pid=%d\n", getpid());
	fflush(stdout);
	for (unsigned i = 0;; i = (i + 1) % 4)
		paths[i]();
}
