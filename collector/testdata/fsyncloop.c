// fsyncloop: a thread that appends to a file and fsyncs it in a loop, as a
// journal does.
//
// Prints "pid=P" and "tid=T" for the writing thread.
// Usage: fsyncloop FILE
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *path;
static volatile long flushes;

// flush_journal is the call site the tests look for; the count after the
// fsync keeps the compiler from turning the call into a tail jump, which
// would take flush_journal off the stack.
__attribute__((noinline)) void flush_journal(int fd)
{
	if (fsync(fd) == 0)
		flushes++;
}

static void *writer(void *arg)
{
	(void)arg;
	printf("tid=%d\n", gettid());
	fflush(stdout);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(path);
		return NULL;
	}
	char buf[4096];
	memset(buf, 'j', sizeof(buf));
	for (long i = 0;; i++) {
		if (write(fd, buf, sizeof(buf)) < 0)
			perror("write");
		flush_journal(fd);
		if (i % 256 == 255 && ftruncate(fd, 0) == 0)
			lseek(fd, 0, SEEK_SET);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: fsyncloop FILE\n");
		return 2;
	}
	path = argv[1];
	printf("pid=%d\n", getpid());
	fflush(stdout);
	pthread_t t;
	pthread_create(&t, NULL, writer, NULL);
	pthread_join(t, NULL);
	return 0;
}
