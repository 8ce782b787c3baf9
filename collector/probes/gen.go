// Package probes holds contend's BPF objects, compiled from bpf/ by bpf2go:
// one object per probe family (Futex, Io, Sched, Oncpu, Gosync). The generated .go
// and .o files are committed so that building contend needs no C
// toolchain; `make generate` rebuilds them (clang-16, llvm-16, libbpf-dev).
// Nothing but generated code lives here: the collector loads these objects
// and holds all logic. A new family is a bpf/<family>.bpf.c, a line here
// and an entry in the collector's object table.
package probes

//go:generate go tool bpf2go -cc clang-16 -strip llvm-strip-16 -cflags "-O2 -g -Wall -Werror" -no-global-types -target amd64 Futex ../../bpf/futex.bpf.c -- -I../../bpf
//go:generate go tool bpf2go -cc clang-16 -strip llvm-strip-16 -cflags "-O2 -g -Wall -Werror" -no-global-types -target amd64 Io ../../bpf/io.bpf.c -- -I../../bpf
//go:generate go tool bpf2go -cc clang-16 -strip llvm-strip-16 -cflags "-O2 -g -Wall -Werror" -no-global-types -target amd64 Sched ../../bpf/sched.bpf.c -- -I../../bpf
//go:generate go tool bpf2go -cc clang-16 -strip llvm-strip-16 -cflags "-O2 -g -Wall -Werror" -no-global-types -target amd64 Oncpu ../../bpf/oncpu.bpf.c -- -I../../bpf
//go:generate go tool bpf2go -cc clang-16 -strip llvm-strip-16 -cflags "-O2 -g -Wall -Werror" -no-global-types -target amd64 Gosync ../../bpf/gosync.bpf.c -- -I../../bpf
