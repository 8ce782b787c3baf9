// churnwait: short-lived threads, each making CALLS futex waits of 20 µs
// on one futex word nobody wakes (each sleeps until its timeout) and then
// exiting, AT_ONCE at a time, TOTAL in all: the thread churn of a program
// that starts a thread per task. It starts once the file named by its
// first argument exists (so that a test can attach first), and at the end
// prints the number of waits that timed out, of those that slept first,
// and of threads it started, then exits.
//
// Prints "pid=P", "word=0x…", then "waits=N slept=S threads=M".
// Usage: churnwait go-file [total-threads] [at-once] [calls-per-thread]
#define _GNU_SOURCE
#include <linux/futex.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int word;
static long calls = 200;
static atomic_long waits, slept;
static sem_t slots;

// voluntary returns the calling thread's voluntary context switches: the
// times it went to sleep.
static long voluntary(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru) != 0)
		return -1;
	return ru.ru_nvcsw;
}

// wait_alone makes calls waits that each sleep until their timeout: the
// word stays 0, so the kernel puts the thread to sleep. Only the waits
// that timed out are counted (none can end otherwise, but a signal could
// interrupt one), and apart those that slept: a thread preempted inside
// the call (or whose CPU the hypervisor took) after the 20 µs timer was
// armed can find it expired when it runs again and return without
// sleeping, and a wait that never slept is not one the probes can see.
__attribute__((noinline)) void wait_alone(void)
{
	struct timespec ts = {0, 20000};
	long n = 0, s = 0;
	for (long i = 0; i < calls; i++) {
		long before = voluntary();
		if (syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0) == -1 && errno == ETIMEDOUT) {
			n++;
			if (voluntary() > before)
				s++;
		}
	}
	atomic_fetch_add(&waits, n);
	atomic_fetch_add(&slept, s);
}

static void *task(void *arg)
{
	(void)arg;
	wait_alone();
	sem_post(&slots);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: churnwait go-file [total] [at-once] [calls]\n");
		return 2;
	}
	long total = argc > 2 ? atol(argv[2]) : 3000;
	int at_once = argc > 3 ? atoi(argv[3]) : 16;
	if (argc > 4)
		calls = atol(argv[4]);
	printf("pid=%d word=%p\n", getpid(), (void *)&word);
	fflush(stdout);
	while (access(argv[1], F_OK) != 0)
		usleep(10000);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sem_init(&slots, 0, at_once);
	for (long i = 0; i < total; i++) {
		sem_wait(&slots);
		pthread_t t;
		int err, tries = 0;
		// A detached thread posts its slot just before it exits, and the
		// kernel reaps it a little later: on a loaded machine the threads
		// still exiting can reach the task limit, and pthread_create
		// says EAGAIN. Wait for them rather than give up.
		while ((err = pthread_create(&t, &attr, task, NULL)) == EAGAIN && ++tries < 2000)
			usleep(1000);
		if (err != 0) {
			errno = err;
			perror("pthread_create");
			return 1;
		}
	}
	for (int i = 0; i < at_once; i++)
		sem_wait(&slots);
	printf("waits=%ld slept=%ld threads=%ld\n", atomic_load(&waits), atomic_load(&slept), total);
	fflush(stdout);
	return 0;
}
