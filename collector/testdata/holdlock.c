// holdlock: the main thread takes a pthread mutex and keeps it forever;
// one thread blocks on it at once, another after a delay. The collector's
// tests record it and check that both waits, which never end, are
// accounted as in progress: the first began before the recording (its
// start entry is seeded from /proc), the second during it.
//
// Prints "pid=P lock=0xADDR owner=TID", then "early=TID" and, after the
// delay, "late=TID".
// Usage: holdlock [late-delay-ms]
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static int late_delay_ms;

static void *early(void *arg)
{
	(void)arg;
	printf("early=%d\n", gettid());
	fflush(stdout);
	pthread_mutex_lock(&held_lock);
	return NULL;
}

static void *late(void *arg)
{
	(void)arg;
	usleep(late_delay_ms * 1000);
	printf("late=%d\n", gettid());
	fflush(stdout);
	pthread_mutex_lock(&held_lock);
	return NULL;
}

int main(int argc, char **argv)
{
	late_delay_ms = argc > 1 ? atoi(argv[1]) : 1000;
	pthread_mutex_lock(&held_lock);
	printf("pid=%d lock=%p owner=%d\n", getpid(), (void *)&held_lock, gettid());
	fflush(stdout);
	pthread_t a, b;
	pthread_create(&a, NULL, early, NULL);
	pthread_create(&b, NULL, late, NULL);
	for (;;)
		pause();
}
