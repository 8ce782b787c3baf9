// ledger: threads move money between accounts under one global pthread
// mutex, so most of them are blocked in glibc's lock wait at any moment.
// The symbolize tests attach to a blocked thread, unwind its stack and
// expect __lll_lock_wait -> pthread_mutex_lock -> account_transfer ->
// teller -> start_thread.
//
// On start it prints one line of addresses for the tests to check against:
//   ready lock=0x… lock_off=N bss=0x… bss_off=N teller=0x… relro=0x…
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct ledger {
	long balance[64];
	pthread_mutex_t lock;
};

// Initialised data: lands in .data.
struct ledger ledger = {.balance = {1000}, .lock = PTHREAD_MUTEX_INITIALIZER};

// Pointers needing relocation in a position-independent executable: land
// in .data.rel.ro, read-only after start-up (RELRO).
const char *const account_names[] = {"cash", "savings", "loans", "fees"};

// 1 MiB of zeroes: lands in .bss, most of it in the anonymous mapping
// after the file mapping.
char scratch[1 << 20];

static volatile long sink;

// hold keeps the lock long enough that the other tellers queue up.
static void hold(void) {
	struct timespec ts = {0, 2000000};
	nanosleep(&ts, NULL);
}

// audit is always inlined into account_transfer; with DWARF its frame is
// expanded.
static inline __attribute__((always_inline)) void audit(int from, int to) {
	sink += ledger.balance[from] + ledger.balance[to];
}

__attribute__((noinline)) void account_transfer(int from, int to, long amount) {
	pthread_mutex_lock(&ledger.lock);
	ledger.balance[from] -= amount;
	ledger.balance[to] += amount;
	scratch[from]++;
	audit(from, to);
	hold();
	pthread_mutex_unlock(&ledger.lock);
}

// teller is static: in a stripped binary it has no symbol at all.
__attribute__((noinline)) static void *teller(void *arg) {
	long id = (long)arg;
	for (;;)
		account_transfer(id % 64, (id + 1) % 64, 1);
	return NULL;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 4;
	pthread_t t[64];
	if (n < 1 || n > 64)
		n = 4;
	printf("ready lock=%p lock_off=%zu bss=%p bss_off=%d teller=%p relro=%p\n",
	       (void *)&ledger.lock, offsetof(struct ledger, lock),
	       (void *)&scratch[700000], 700000, (void *)teller,
	       (void *)&account_names[1]);
	fflush(stdout);
	for (long i = 0; i < n; i++)
		pthread_create(&t[i], NULL, teller, (void *)i);
	for (;;)
		pause();
}
