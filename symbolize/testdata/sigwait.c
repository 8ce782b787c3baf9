// sigwait: a thread spinning in spin_victim takes a signal whose handler
// blocks on a mutex the main thread holds. Unwinding the blocked thread
// must cross the signal frame (glibc's __restore_rt, described by CFI
// expressions over the saved ucontext) back into spin_victim.
//
// Prints: ready lock=0x…
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static volatile long spins;

__attribute__((noinline)) static void on_signal(int sig) {
	(void)sig;
	pthread_mutex_lock(&gate);
	pthread_mutex_unlock(&gate);
}

__attribute__((noinline)) static void spin_victim(void) {
	for (;;)
		spins++;
}

__attribute__((noinline)) static void *victim(void *arg) {
	(void)arg;
	spin_victim();
	return NULL;
}

int main(void) {
	struct sigaction sa;
	pthread_t t;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, NULL);
	pthread_mutex_lock(&gate);
	pthread_create(&t, NULL, victim, NULL);
	while (spins == 0)
		usleep(1000);
	pthread_kill(t, SIGUSR1);
	printf("ready lock=%p\n", (void *)&gate);
	fflush(stdout);
	for (;;)
		pause();
}
