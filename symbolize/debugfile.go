package symbolize

import (
	"bytes"
	"debug/elf"
	"hash/crc32"
	"os"
	"path/filepath"
	"syscall"
)

// defaultDebugDir is where Debian and most distributions install separate
// debug files (packages such as libc6-dbg).
const defaultDebugDir = "/usr/lib/debug"

// debugCandidates lists, in search order, the paths where a separate debug
// file for o may live: by build id under each debug directory, then by
// .gnu_debuglink next to the object, in its .debug/ subdirectory and under
// each debug directory followed by the object's directory (GDB's order).
// root prefixes paths in the target's mount namespace (/proc/PID/root).
func debugCandidates(o *object, root string, debugDirs []string) []string {
	var out []string
	if len(o.buildID) > 2 {
		for _, d := range debugDirs {
			out = append(out, filepath.Join(d, ".build-id", o.buildID[:2], o.buildID[2:]+".debug"))
		}
	}
	if o.debugLink != "" && filepath.Base(o.debugLink) == o.debugLink {
		dir := filepath.Dir(o.path)
		out = append(out,
			filepath.Join(root, dir, o.debugLink),
			filepath.Join(root, dir, ".debug", o.debugLink))
		for _, d := range debugDirs {
			out = append(out, filepath.Join(d, dir, o.debugLink))
		}
	}
	return out
}

// findDebugFile opens the first candidate that matches o: same build id
// when o has one, otherwise the CRC recorded in .gnu_debuglink. The
// object's own file is never taken as its debug file.
func findDebugFile(o *object, root string, debugDirs []string) *debugFile {
	var self os.FileInfo
	for _, c := range debugCandidates(o, root, debugDirs) {
		st, err := os.Stat(c)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		if self == nil {
			self, _ = os.Stat(filepath.Join(root, o.path))
		}
		if self != nil && os.SameFile(st, self) {
			continue
		}
		if d := openDebugFile(c, o); d != nil {
			return d
		}
	}
	return nil
}

func openDebugFile(path string, o *object) *debugFile {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
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
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil || ef.Class != elf.ELFCLASS64 {
		return nil
	}
	probe := &object{data: data, ef: ef}
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
	return &debugFile{path: path, data: data, mapped: true, ef: ef}
}
