// dlopen: loads libm when a line arrives on stdin and prints the address
// of frexp, so a test can check that symbolize.Process.Refresh sees
// libraries loaded after Open.
#include <dlfcn.h>
#include <stdio.h>

int main(void) {
	char line[64];
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof line, stdin)) {
		void *h = dlopen("libm.so.6", RTLD_NOW);
		if (!h) {
			printf("error %s\n", dlerror());
		} else {
			printf("frexp=%p\n", dlsym(h, "frexp"));
		}
		fflush(stdout);
	}
	return 0;
}
