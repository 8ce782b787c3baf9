package symbolize

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
)

// craftSection is one section of a crafted ELF file.
type craftSection struct {
	name  string
	typ   elf.SectionType
	flags elf.SectionFlag
	addr  uint64
	data  []byte
	link  uint32
}

// craftELF writes a 64-bit little-endian x86-64 ELF file holding the
// given sections (after the null section, and followed by .shstrtab), and
// one PT_LOAD segment covering the file when load is set. It is how tests
// build hostile objects in a few lines instead of committing binaries.
func craftELF(load bool, secs ...craftSection) []byte {
	const ehsize, phsize, shsize = 64, 56, 64
	var shstr bytes.Buffer
	shstr.WriteByte(0)
	nameOff := make([]uint32, len(secs)+1)
	for i, s := range secs {
		nameOff[i] = uint32(shstr.Len())
		shstr.WriteString(s.name)
		shstr.WriteByte(0)
	}
	nameOff[len(secs)] = uint32(shstr.Len())
	shstr.WriteString(".shstrtab\x00")
	all := append(append([]craftSection(nil), secs...), craftSection{name: ".shstrtab", typ: elf.SHT_STRTAB, data: shstr.Bytes()})

	phnum := 0
	if load {
		phnum = 1
	}
	off := uint64(ehsize + phsize*phnum)
	offsets := make([]uint64, len(all))
	var body bytes.Buffer
	for i, s := range all {
		for (off+uint64(body.Len()))%8 != 0 {
			body.WriteByte(0)
		}
		offsets[i] = off + uint64(body.Len())
		body.Write(s.data)
	}
	for (off+uint64(body.Len()))%8 != 0 {
		body.WriteByte(0)
	}
	shoff := off + uint64(body.Len())
	fileSize := shoff + uint64(shsize*(len(all)+1))

	var b bytes.Buffer
	le := binary.LittleEndian
	w := func(v any) { binary.Write(&b, le, v) }
	b.Write([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	w(uint16(elf.ET_DYN))
	w(uint16(elf.EM_X86_64))
	w(uint32(1))
	w(uint64(0)) // entry
	if load {
		w(uint64(ehsize))
	} else {
		w(uint64(0))
	}
	w(shoff)
	w(uint32(0))
	w(uint16(ehsize))
	w(uint16(phsize))
	w(uint16(phnum))
	w(uint16(shsize))
	w(uint16(len(all) + 1))
	w(uint16(len(all))) // .shstrtab is last
	if load {
		w(uint32(elf.PT_LOAD))
		w(uint32(elf.PF_R | elf.PF_X))
		w(uint64(0))      // offset
		w(uint64(0))      // vaddr
		w(uint64(0))      // paddr
		w(fileSize)       // filesz
		w(fileSize)       // memsz
		w(uint64(0x1000)) // align
	}
	b.Write(body.Bytes())
	b.Write(make([]byte, shsize)) // the null section
	for i, s := range all {
		w(nameOff[i])
		w(uint32(s.typ))
		w(uint64(s.flags))
		w(s.addr)
		w(offsets[i])
		w(uint64(len(s.data)))
		w(s.link)
		w(uint32(0))
		w(uint64(1))
		if s.typ == elf.SHT_SYMTAB || s.typ == elf.SHT_DYNSYM {
			w(uint64(24))
		} else {
			w(uint64(0))
		}
	}
	return b.Bytes()
}

// compressedSection returns the content of an SHF_COMPRESSED section: the
// ELF compression header stating size bytes once inflated, then stream.
func compressedSection(size uint64, stream []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint32(elf.COMPRESS_ZLIB))
	binary.Write(&b, binary.LittleEndian, uint32(0))
	binary.Write(&b, binary.LittleEndian, size)
	binary.Write(&b, binary.LittleEndian, uint64(1))
	b.Write(stream)
	return b.Bytes()
}

// zdebugSection returns the content of a .zdebug section: "ZLIB", the
// big-endian inflated size, then stream.
func zdebugSection(size uint64, stream []byte) []byte {
	b := []byte("ZLIB")
	b = binary.BigEndian.AppendUint64(b, size)
	return append(b, stream...)
}

// pclnHeader returns a Go 1.20 function table header for nfunc functions
// whose tables all start at off.
func pclnHeader(nfunc, off uint64) []byte {
	b := []byte{0xf1, 0xff, 0xff, 0xff, 0, 0, 1, 8}
	for _, v := range []uint64{nfunc, 0, 0, off, off, off, off, off} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

// symEntry64 encodes one Elf64_Sym.
func symEntry64(name uint32, info byte, shndx uint16, value, size uint64) []byte {
	b := binary.LittleEndian.AppendUint32(nil, name)
	b = append(b, info, 0)
	b = binary.LittleEndian.AppendUint16(b, shndx)
	b = binary.LittleEndian.AppendUint64(b, value)
	return binary.LittleEndian.AppendUint64(b, size)
}
