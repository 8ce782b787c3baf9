package symbolize

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Bounds on the section headers of an ELF file that CheckELF lets
// debug/elf read. Executables and shared libraries have a few dozen
// sections with names of a few dozen bytes each; relocatable objects
// built with -ffunction-sections reach tens of thousands, still far
// below these.
const (
	// maxSections bounds the sections of one file (65535 is the most
	// without the extended numbering of section 0).
	maxSections = 1 << 16
	// maxSectionNameBytes bounds the section name table and the sum of
	// the names that debug/elf copies out of it.
	maxSectionNameBytes = 4 << 20
)

// errELFNames reports section headers that CheckELF refuses.
var errELFNames = errors.New("section headers beyond what a real ELF file has")

// CheckELF reports an error when debug/elf would spend time or memory
// out of proportion to the ELF file in r, of size bytes, when opening it:
// elf.NewFile copies each section's name out of the section name table,
// scanning a byte at a time up to its NUL, so section headers that all
// point into one long name cost the table's size per section (a file of
// 1.3 MB, 4,096 sections into a 1 MiB name, did not open in a minute).
// It also refuses a compressed name table, which debug/elf would inflate
// to whatever size its header claims. A file CheckELF accepts may still
// be malformed; debug/elf then says so. Call it before elf.NewFile (or
// debug/buildinfo, which opens the file with it) on a file that another
// user controls.
func CheckELF(r io.ReaderAt, size int64) error {
	var ident [64]byte
	n, _ := r.ReadAt(ident[:], 0)
	if n < 52 || string(ident[:4]) != "\x7fELF" {
		return nil // not ELF, or too short: debug/elf refuses it
	}
	var order binary.ByteOrder
	switch ident[5] {
	case 1:
		order = binary.LittleEndian
	case 2:
		order = binary.BigEndian
	default:
		return nil
	}
	// Offsets of the header fields and section header fields used, per
	// class: e_shoff, e_shentsize, e_shnum, e_shstrndx; sh_flags,
	// sh_offset, sh_size, sh_link, and the width of the wide ones.
	var shoff uint64
	var entsize, shnum, strndx uint64
	var fFlags, fOff, fSize, fLink, wide int
	switch ident[4] {
	case 1: // ELFCLASS32
		shoff = uint64(order.Uint32(ident[0x20:]))
		entsize, shnum, strndx = uint64(order.Uint16(ident[0x2e:])), uint64(order.Uint16(ident[0x30:])), uint64(order.Uint16(ident[0x32:]))
		fFlags, fOff, fSize, fLink, wide = 8, 16, 20, 24, 4
		if entsize < 40 {
			return nil
		}
	case 2: // ELFCLASS64
		if n < 64 {
			return nil
		}
		shoff = order.Uint64(ident[0x28:])
		entsize, shnum, strndx = uint64(order.Uint16(ident[0x3a:])), uint64(order.Uint16(ident[0x3c:])), uint64(order.Uint16(ident[0x3e:]))
		fFlags, fOff, fSize, fLink, wide = 8, 24, 32, 40, 8
		if entsize < 64 {
			return nil
		}
	default:
		return nil
	}
	if shoff == 0 || size <= 0 || shoff >= uint64(size) {
		return nil
	}
	word := func(b []byte) uint64 {
		if wide == 4 {
			return uint64(order.Uint32(b))
		}
		return order.Uint64(b)
	}
	header := func(i uint64) ([]byte, error) {
		b := make([]byte, entsize)
		if _, err := r.ReadAt(b, int64(shoff+i*entsize)); err != nil {
			return nil, fmt.Errorf("read section header %d: %w", i, err)
		}
		return b, nil
	}
	if shnum == 0 || strndx == 0xffff { // SHN_XINDEX: the real values are in section 0
		s0, err := header(0)
		if err != nil {
			return err
		}
		if shnum == 0 {
			shnum = word(s0[fSize:])
		}
		if strndx == 0xffff {
			strndx = uint64(order.Uint32(s0[fLink:]))
		}
	}
	if shnum > maxSections || shnum*entsize > uint64(size)-shoff {
		return fmt.Errorf("%d section headers of %d bytes at offset %d in a file of %d: %w", shnum, entsize, shoff, size, errELFNames)
	}
	if strndx == 0 || strndx >= shnum {
		return nil
	}
	table := make([]byte, shnum*entsize)
	if _, err := r.ReadAt(table, int64(shoff)); err != nil {
		return fmt.Errorf("read section headers: %w", err)
	}
	str := table[strndx*entsize:]
	const shfCompressed = 0x800
	strOff, strSize := word(str[fOff:]), word(str[fSize:])
	switch {
	case word(str[fFlags:])&shfCompressed != 0:
		return fmt.Errorf("compressed section name table: %w", errELFNames)
	case strSize > maxSectionNameBytes:
		return fmt.Errorf("section name table of %d bytes: %w", strSize, errELFNames)
	case strOff > uint64(size) || strSize > uint64(size)-strOff:
		return nil // past the end: debug/elf refuses it
	}
	names := make([]byte, strSize)
	if _, err := r.ReadAt(names, int64(strOff)); err != nil {
		return fmt.Errorf("read section name table: %w", err)
	}
	// The sum of the names debug/elf copies, each up to its NUL: a name
	// longer than maxNameLen, or a sum past maxSectionNameBytes, is
	// refused as soon as it is seen, so the scan costs no more than that.
	var total uint64
	for i := range shnum {
		off := uint64(order.Uint32(table[i*entsize:]))
		if off >= strSize {
			continue // debug/elf refuses the file
		}
		n := bytes.IndexByte(names[off:min(strSize, off+maxNameLen+1)], 0)
		if n < 0 {
			return fmt.Errorf("section %d: name longer than %d bytes: %w", i, maxNameLen, errELFNames)
		}
		if total += uint64(n); total > maxSectionNameBytes {
			return fmt.Errorf("section names of more than %d bytes: %w", maxSectionNameBytes, errELFNames)
		}
	}
	return nil
}
