// hog: more spinning threads than CPUs. Every thread stays runnable in
// spin_loop, so the threads keep preempting each other (off-CPU:
// runnable) and on-CPU samples land in spin_loop.
//
// Prints "pid=P" and "tid=T" per spinner.
// Usage: hog [threads]  (default: 2 * CPUs + 1)
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile unsigned long spins;

__attribute__((noinline)) void spin_loop(void)
{
	for (;;)
		spins++;
}

static void *spinner(void *arg)
{
	(void)arg;
	printf("tid=%d\n", gettid());
	fflush(stdout);
	spin_loop();
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2 * sysconf(_SC_NPROCESSORS_ONLN) + 1;
	printf("pid=%d\n", getpid());
	fflush(stdout);
	pthread_t t[256];
	if (n > 256)
		n = 256;
	for (long i = 0; i < n; i++)
		pthread_create(&t[i], NULL, spinner, NULL);
	for (long i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
