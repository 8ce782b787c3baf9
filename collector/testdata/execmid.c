// execmid: threads contending on one pthread mutex until SIGUSR1 comes
// (the test sends it once the recording is under way); then, after a
// delay, half of them exit at once, and after another the process exec()s
// another program (which keeps its pid). The CLI's fault tests record
// across both and check that the convoy recorded before the exec is still
// named from the first image.
//
// Prints "pid=P". Usage: execmid threads exit-after-ms exec-after-ms program [args...]
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

pthread_mutex_t big_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long shared_counter;
static atomic_int quit_half;

__attribute__((noinline)) static void hold_lock_work(void)
{
	for (volatile int i = 0; i < 20000; i++)
		shared_counter++;
}

__attribute__((noinline)) void update_shared_state(void)
{
	pthread_mutex_lock(&big_lock);
	hold_lock_work();
	pthread_mutex_unlock(&big_lock);
	shared_counter++;
}

static void *worker(void *arg)
{
	long id = (long)arg;
	for (;;) {
		if (id % 2 == 1 && atomic_load(&quit_half))
			return NULL; // half the threads exit at once
		update_shared_state();
		for (volatile int i = 0; i < 2000; i++)
			;
	}
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: execmid threads exit-after-ms exec-after-ms program [args...]\n");
		return 2;
	}
	int n = atoi(argv[1]);
	if (n > 64)
		n = 64;
	printf("pid=%d\n", getpid());
	fflush(stdout);
	// SIGUSR1 stays blocked in every thread; main takes it with sigwait.
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	pthread_t t[64];
	for (long i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	int sig;
	sigwait(&usr1, &sig);
	usleep(atoi(argv[2]) * 1000);
	atomic_store(&quit_half, 1);
	usleep(atoi(argv[3]) * 1000);
	execv(argv[4], &argv[4]);
	perror("execv");
	return 1;
}
