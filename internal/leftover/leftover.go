// Package leftover finds contend's BPF programs still loaded in the
// kernel and what holds each one: a running contend (which detaches them
// when it ends), or no process at all (a pin in the BPF file system, or
// an attachment that outlived its process), which only removing the pin
// or a reboot clears. contend never pins its programs and the kernel
// frees them with the last descriptor, so after a contend is killed,
// even with SIGKILL in the middle of attaching, nothing should be left:
// `contend doctor` uses this package to say so, or what to do.
package leftover

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"
)

// Prefix starts the name of every BPF program contend loads (bpf/*.c).
const Prefix = "ct_"

// Program is one of contend's programs loaded in the kernel.
type Program struct {
	ID   uint32
	Name string
	// Holders are the processes with a descriptor on the program or on
	// a link to it; none means it outlived its process.
	Holders []Holder
}

// Holder is a process that holds a program.
type Holder struct {
	PID int
	// Cmdline is the holder's command line, spaces between arguments.
	Cmdline string
}

// settle is how long Find waits before it looks again at programs no
// process holds: the kernel frees a program some time after its last
// descriptor is closed (after an RCU grace period, milliseconds), so a
// contend that has just ended, or this process's own probes just closed,
// can still be listed for a moment.
const settle = 250 * time.Millisecond

// Find lists contend's programs loaded in the kernel, with their holders
// read from /proc/*/fdinfo. A program no process holds is looked at
// again after settle, and reported only if still there. Listing programs
// needs CAP_SYS_ADMIN (or CAP_BPF); without it the error wraps
// os.ErrPermission.
func Find() ([]Program, error) {
	progs, err := find()
	if err != nil || len(Orphans(progs)) == 0 {
		return progs, err
	}
	time.Sleep(settle)
	return find()
}

func find() ([]Program, error) {
	var out []Program
	id := ebpf.ProgramID(0)
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("list BPF programs: %w", err)
		}
		id = next
		name, ok := progName(id)
		if !ok || !strings.HasPrefix(name, Prefix) {
			continue
		}
		out = append(out, Program{ID: uint32(id), Name: name})
	}
	if len(out) == 0 {
		return nil, nil
	}
	holders := holdersByProgram()
	for i := range out {
		out[i].Holders = holders[out[i].ID]
	}
	return out, nil
}

// progName returns the name of program id; false when it went away or
// cannot be read.
func progName(id ebpf.ProgramID) (string, bool) {
	p, err := ebpf.NewProgramFromID(id)
	if err != nil {
		return "", false
	}
	defer p.Close()
	info, err := p.Info()
	if err != nil {
		return "", false
	}
	return info.Name, true
}

// holdersByProgram maps program ids to the processes whose descriptors
// (of the program, or of a link attaching it) name them in fdinfo.
func holdersByProgram() map[uint32][]Holder {
	out := map[uint32][]Holder{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range procs {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil {
			continue
		}
		ids := progIDs(dir)
		if len(ids) == 0 {
			continue
		}
		h := Holder{PID: pid, Cmdline: cmdline(dir)}
		for id := range ids {
			out[id] = append(out[id], h)
		}
	}
	for _, hs := range out {
		sort.Slice(hs, func(i, j int) bool { return hs[i].PID < hs[j].PID })
	}
	return out
}

// progIDs returns the program ids process dir's descriptors name.
func progIDs(dir string) map[uint32]bool {
	fds, err := os.ReadDir(filepath.Join(dir, "fdinfo"))
	if err != nil {
		return nil
	}
	ids := map[uint32]bool{}
	for _, fd := range fds {
		b, err := os.ReadFile(filepath.Join(dir, "fdinfo", fd.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			v, ok := strings.CutPrefix(line, "prog_id:")
			if !ok {
				continue
			}
			if id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
				ids[uint32(id)] = true
			}
		}
	}
	return ids
}

func cmdline(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

// Orphans returns the programs no process holds.
func Orphans(progs []Program) []Program {
	var out []Program
	for _, p := range progs {
		if len(p.Holders) == 0 {
			out = append(out, p)
		}
	}
	return out
}
