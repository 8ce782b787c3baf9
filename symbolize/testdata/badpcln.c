// badpcln: a C program carrying a crafted Go function table, as a hostile
// target can: a 104-byte .gopclntab whose header says 4 functions while
// its function table holds 4 entries, one fewer than the 5 such a table
// needs (the last entry marks the end of the text). A symbolizer that
// trusts the count reads past the table.
//
// It prints "ready spin=0x…" and spins in spin_here until killed.
#include <stdio.h>
#include <unistd.h>

#define W(v) (v) & 0xff, ((v) >> 8) & 0xff, 0, 0, 0, 0, 0, 0

__attribute__((section(".gopclntab"), used)) static const unsigned char pcln[104] = {
	0xf1, 0xff, 0xff, 0xff, // Go 1.20 magic
	0, 0, 1, 8,             // padding, instruction size quantum, pointer size
	W(4),                   // nfunc
	W(0),                   // nfiles
	W(0),                   // text start (unused since Go 1.20)
	W(72), W(72), W(72), W(72), W(72), // funcname, cu, file, pc tables, function table
	// 32 bytes of function table: 4 entries of entry offset and record
	// offset, all zero.
};

__attribute__((noinline)) void spin_here(void) {
	for (;;)
		pause();
}

int main(void) {
	printf("ready spin=%p\n", (void *)spin_here);
	fflush(stdout);
	spin_here();
	return 0;
}
