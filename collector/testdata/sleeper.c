// sleeper: one thread that sleeps in a loop (off-CPU: sleeping), and a
// main thread that waits for it.
//
// Prints "pid=P" and "tid=T" for the sleeping thread.
// Usage: sleeper [seconds-to-live]  (0: forever)
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) void nap(void)
{
	struct timespec ts = {0, 20 * 1000 * 1000};
	nanosleep(&ts, NULL);
}

static void *sleeper(void *arg)
{
	(void)arg;
	printf("tid=%d\n", gettid());
	fflush(stdout);
	for (;;)
		nap();
	return NULL;
}

int main(int argc, char **argv)
{
	int life = argc > 1 ? atoi(argv[1]) : 0;
	printf("pid=%d\n", getpid());
	fflush(stdout);
	pthread_t t;
	pthread_create(&t, NULL, sleeper, NULL);
	if (life > 0) {
		sleep(life);
		printf("exiting\n");
		fflush(stdout);
		return 0;
	}
	pthread_join(t, NULL);
	return 0;
}
