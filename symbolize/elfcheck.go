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
	l, ok := parseELFHeader(ident[:n])
	if !ok || l.shoff == 0 || size <= 0 || l.shoff >= uint64(size) {
		return nil
	}
	if err := l.resolveExtended(r); err != nil {
		return err
	}
	if l.shnum > maxSections || l.shnum*l.entsize > uint64(size)-l.shoff {
		return fmt.Errorf("%d section headers of %d bytes at offset %d in a file of %d: %w", l.shnum, l.entsize, l.shoff, size, errELFNames)
	}
	if l.strndx == 0 || l.strndx >= l.shnum {
		return nil
	}
	table := make([]byte, l.shnum*l.entsize)
	if _, err := r.ReadAt(table, int64(l.shoff)); err != nil {
		return fmt.Errorf("read section headers: %w", err)
	}
	names, err := l.readNameTable(r, size, table)
	if names == nil || err != nil {
		return err
	}
	return l.checkNames(table, names)
}

// elfLayout is where CheckELF finds the section headers of one file and
// the fields it reads in each; the offsets and widths of those fields
// differ between ELFCLASS32 and ELFCLASS64.
type elfLayout struct {
	order                  binary.ByteOrder
	shoff                  uint64 // e_shoff
	entsize, shnum, strndx uint64 // e_shentsize, e_shnum, e_shstrndx
	// Offsets of sh_flags, sh_offset, sh_size, sh_link in a header, and
	// the width in bytes of sh_flags, sh_offset and sh_size.
	fFlags, fOff, fSize, fLink, wide int
}

// parseELFHeader reads the layout from ident, the first bytes of a file.
// It reports false for what is not ELF, is too short, or has an unknown
// class or byte order or headers too small to hold the fields: debug/elf
// refuses all of those itself.
func parseELFHeader(ident []byte) (elfLayout, bool) {
	var l elfLayout
	if len(ident) < 52 || string(ident[:4]) != "\x7fELF" {
		return l, false
	}
	switch ident[5] {
	case 1:
		l.order = binary.LittleEndian
	case 2:
		l.order = binary.BigEndian
	default:
		return l, false
	}
	order := l.order
	switch ident[4] {
	case 1: // ELFCLASS32
		l.shoff = uint64(order.Uint32(ident[0x20:]))
		l.entsize, l.shnum, l.strndx = uint64(order.Uint16(ident[0x2e:])), uint64(order.Uint16(ident[0x30:])), uint64(order.Uint16(ident[0x32:]))
		l.fFlags, l.fOff, l.fSize, l.fLink, l.wide = 8, 16, 20, 24, 4
		return l, l.entsize >= 40
	case 2: // ELFCLASS64
		if len(ident) < 64 {
			return l, false
		}
		l.shoff = order.Uint64(ident[0x28:])
		l.entsize, l.shnum, l.strndx = uint64(order.Uint16(ident[0x3a:])), uint64(order.Uint16(ident[0x3c:])), uint64(order.Uint16(ident[0x3e:]))
		l.fFlags, l.fOff, l.fSize, l.fLink, l.wide = 8, 24, 32, 40, 8
		return l, l.entsize >= 64
	}
	return l, false
}

// word reads a field of the class's width (sh_flags, sh_offset, sh_size)
// from the start of b.
func (l *elfLayout) word(b []byte) uint64 {
	if l.wide == 4 {
		return uint64(l.order.Uint32(b))
	}
	return l.order.Uint64(b)
}

// resolveExtended replaces a zero e_shnum or an SHN_XINDEX e_shstrndx with
// the real value, which extended numbering keeps in section 0's sh_size
// and sh_link. The caller has checked that shoff lies inside the file.
func (l *elfLayout) resolveExtended(r io.ReaderAt) error {
	if l.shnum != 0 && l.strndx != 0xffff {
		return nil
	}
	s0 := make([]byte, l.entsize)
	if _, err := r.ReadAt(s0, int64(l.shoff)); err != nil {
		return fmt.Errorf("read section header 0: %w", err)
	}
	if l.shnum == 0 {
		l.shnum = l.word(s0[l.fSize:])
	}
	if l.strndx == 0xffff {
		l.strndx = uint64(l.order.Uint32(s0[l.fLink:]))
	}
	return nil
}

// readNameTable reads the section name table that the header at strndx in
// table points to. It returns an error for a compressed table or one
// larger than maxSectionNameBytes, and nil bytes with no error for one
// that runs past the end of the file, which debug/elf refuses.
func (l *elfLayout) readNameTable(r io.ReaderAt, size int64, table []byte) ([]byte, error) {
	str := table[l.strndx*l.entsize:]
	const shfCompressed = 0x800
	strOff, strSize := l.word(str[l.fOff:]), l.word(str[l.fSize:])
	switch {
	case l.word(str[l.fFlags:])&shfCompressed != 0:
		return nil, fmt.Errorf("compressed section name table: %w", errELFNames)
	case strSize > maxSectionNameBytes:
		return nil, fmt.Errorf("section name table of %d bytes: %w", strSize, errELFNames)
	case strOff > uint64(size) || strSize > uint64(size)-strOff:
		return nil, nil // past the end: debug/elf refuses it
	}
	names := make([]byte, strSize)
	if _, err := r.ReadAt(names, int64(strOff)); err != nil {
		return nil, fmt.Errorf("read section name table: %w", err)
	}
	return names, nil
}

// checkNames returns an error when a section in table names a string in
// names longer than maxNameLen, or the names debug/elf would copy sum
// past maxSectionNameBytes.
func (l *elfLayout) checkNames(table, names []byte) error {
	// The sum of the names debug/elf copies, each up to its NUL: a name
	// longer than maxNameLen, or a sum past maxSectionNameBytes, is
	// refused as soon as it is seen, so the scan costs no more than that.
	strSize := uint64(len(names))
	var total uint64
	for i := range l.shnum {
		off := uint64(l.order.Uint32(table[i*l.entsize:]))
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
