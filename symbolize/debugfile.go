package symbolize

import (
	"bytes"
	"debug/elf"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// defaultDebugDir is where Debian and most distributions install separate
// debug files (packages such as libc6-dbg).
const defaultDebugDir = "/usr/lib/debug"

// debugCandidate is a path where a separate debug file may live.
// beside is set for the paths next to the object (from .gnu_debuglink),
// in a directory the object's owner controls: those are opened without
// following a symbolic link in their last component.
type debugCandidate struct {
	path   string
	beside bool
}

// debugCandidates lists, in search order, the paths where a separate debug
// file for o may live: by build id under each debug directory, then by
// .gnu_debuglink next to the object, in its .debug/ subdirectory and under
// each debug directory followed by the object's directory (GDB's order).
// root prefixes paths in the target's mount namespace (/proc/PID/root).
func debugCandidates(o *object, root string, debugDirs []string) []debugCandidate {
	var out []debugCandidate
	if len(o.buildID) > 2 {
		for _, d := range debugDirs {
			out = append(out, debugCandidate{path: filepath.Join(d, ".build-id", o.buildID[:2], o.buildID[2:]+".debug")})
		}
	}
	// A debug link is a file name: no directory part, and not "." or ".."
	// (which would name the object's directory or its parent).
	if l := o.debugLink; l != "" && !strings.ContainsRune(l, '/') && l != "." && l != ".." {
		dir := filepath.Dir(o.path)
		out = append(out,
			debugCandidate{path: filepath.Join(root, dir, o.debugLink), beside: true},
			debugCandidate{path: filepath.Join(root, dir, ".debug", o.debugLink), beside: true})
		for _, d := range debugDirs {
			out = append(out, debugCandidate{path: filepath.Join(d, dir, o.debugLink)})
		}
	}
	return out
}

// findDebugFile opens the first candidate that matches o: same build id
// when o has one, otherwise the CRC recorded in .gnu_debuglink. Each is
// opened first and checked on its descriptor (a regular file, not o's own
// file), never checked by path and opened after.
func findDebugFile(o *object, root string, debugDirs []string) *debugFile {
	for _, c := range debugCandidates(o, root, debugDirs) {
		flags := 0
		if c.beside {
			flags = unix.O_NOFOLLOW
		}
		f, st, err := openRegular(c.path, flags)
		if err != nil {
			continue
		}
		if o.ino != 0 && st.Dev == o.dev && st.Ino == o.ino {
			f.Close()
			continue
		}
		// The candidate is as untrusted as the object: a malformed one
		// (or one truncated under its mapping) is skipped.
		var d *debugFile
		if guarded(func() { d = openDebugFile(f, o) }) != nil {
			d = nil
		}
		f.Close()
		if d != nil {
			return d
		}
	}
	return nil
}

// openDebugFile maps the open file f and returns it when it is o's debug
// file. It parses the candidate: call it guarded.
func openDebugFile(f *os.File, o *object) *debugFile {
	data, err := mmapFile(f)
	if err != nil {
		return nil
	}
	ok := false
	defer func() {
		if !ok {
			syscall.Munmap(data)
		}
	}()
	if CheckELF(bytes.NewReader(data), int64(len(data))) != nil {
		return nil
	}
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil || ef.Class != elf.ELFCLASS64 {
		return nil
	}
	probe := &object{data: data, ef: ef, budget: o.budget}
	probe.readNotes()
	switch {
	case o.buildID != "":
		if probe.buildID != o.buildID {
			return nil
		}
	case o.debugLink != "":
		if crc32.ChecksumIEEE(data) != o.debugCRC {
			return nil
		}
	default:
		return nil
	}
	ok = true
	return &debugFile{path: f.Name(), data: data, mapped: true, ef: ef}
}
