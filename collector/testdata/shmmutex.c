// shmmutex: CHILDREN forked processes take turns on one
// PTHREAD_PROCESS_SHARED mutex in shared anonymous memory (mapped before
// the fork, so at the same address in each), holding it for a short
// update: their futex waits are on one word of shared memory, without
// FUTEX_PRIVATE_FLAG.
//
// Prints "pid=P" (the parent), "child=C" per child and "lock=0x…".
// Usage: shmmutex [children] [seconds-to-live]
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

struct shared {
	pthread_mutex_t mu;
	uint64_t counter;
};

__attribute__((noinline)) static uint64_t spin(uint64_t x, int n)
{
	for (int i = 0; i < n; i++)
		x = x * 6364136223846793005u + 1442695040888963407u;
	return x;
}

__attribute__((noinline)) void update_shared(struct shared *s, uint64_t x)
{
	pthread_mutex_lock(&s->mu);
	s->counter = spin(s->counter ^ x, 2000);
	pthread_mutex_unlock(&s->mu);
}

int main(int argc, char **argv)
{
	int children = argc > 1 ? atoi(argv[1]) : 3;
	int life = argc > 2 ? atoi(argv[2]) : 60;
	struct shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&s->mu, &a);
	printf("pid=%d lock=%p\n", getpid(), (void *)&s->mu);
	fflush(stdout);
	for (int i = 0; i < children; i++) {
		pid_t c = fork();
		if (c == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the parent */
			alarm(life);
			uint64_t x = getpid();
			for (;;) {
				x = spin(x, 500);
				update_shared(s, x);
			}
		}
		printf("child=%d\n", c);
		fflush(stdout);
	}
	sleep(life);
	kill(0, SIGTERM);
	while (wait(NULL) > 0)
		;
	return 0;
}
