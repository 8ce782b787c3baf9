// cmutex: threads contending on one pthread mutex. The collector's tests
// build it with and without frame pointers and check that the futex wait
// time lands on update_shared_state, the caller of pthread_mutex_lock.
//
// Prints "pid=P lock=0xADDR" then "tid=T" per worker.
// Usage: cmutex [threads] [start-delay-ms]  (workers start after the delay)
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

pthread_mutex_t big_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long shared_counter, updates;

// HOLD_ITERS is how long a worker holds the lock (-DHOLD_ITERS=N).
#ifndef HOLD_ITERS
#define HOLD_ITERS 20000
#endif

// hold_lock_work spins for a while with the lock held, so that others
// queue behind it and sleep in the kernel.
__attribute__((noinline)) static void hold_lock_work(void)
{
	for (volatile int i = 0; i < HOLD_ITERS; i++)
		shared_counter++;
}

// update_shared_state is the call site the tests look for, for the lock
// and the unlock (the count after the unlock keeps the compiler from
// turning that call into a tail jump, which would hide the caller).
__attribute__((noinline)) void update_shared_state(void)
{
	pthread_mutex_lock(&big_lock);
	hold_lock_work();
	pthread_mutex_unlock(&big_lock);
	updates++;
}

static void *worker(void *arg)
{
	(void)arg;
	printf("tid=%d\n", gettid());
	fflush(stdout);
	for (;;) {
		update_shared_state();
		for (volatile int i = 0; i < 2000; i++)
			;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	int delay_ms = argc > 2 ? atoi(argv[2]) : 0;
	printf("pid=%d lock=%p\n", getpid(), (void *)&big_lock);
	fflush(stdout);
	if (delay_ms > 0)
		usleep(delay_ms * 1000);
	pthread_t t[64];
	if (n > 64)
		n = 64;
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
