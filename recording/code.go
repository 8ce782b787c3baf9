package recording

import (
	"fmt"
	"path/filepath"
)

// NativeCodeFile holds the machine code of the hottest native functions
// (NativeCode), copied at record time so that the analysis reads no
// binary: the executable at the recorded path may have been replaced,
// upgraded or never have been on the analyzing machine.
const NativeCodeFile = "native-code.json"

// Bounds of the native code a recording carries. The spin detector
// disassembles the functions that took at least a tenth of the sampled
// CPU (analyzer's spinMinCPUShare), so at most ten of them; sixteen leave
// room for the processes of a multi-process target running the same
// function at different load addresses. A busy-wait loop is a handful of
// instructions in a function of a few hundred bytes; one larger than
// 64 KiB is no tight loop's home, and the cap keeps the file under 1 MiB
// of code (about 1.4 MiB of JSON).
const (
	MaxNativeFunctions = 16
	MaxNativeCode      = 64 << 10
)

// NativeCode is the machine code of one function of an object mapped by
// a target process (its executable or a shared library), as the
// collector's symbolizer read it from the object it opened for that
// mapping.
type NativeCode struct {
	// Module is the base name of the object, as frames name it
	// (Frame.Module).
	Module string `json:"module"`
	// BuildID is the object's GNU build ID in hex, or its Go build ID;
	// "" when it has neither.
	BuildID string `json:"build_id,omitempty"`
	// Name is the function's name in the object's symbol table.
	Name string `json:"name"`
	// PID is the process the function was sampled in, whose load bias
	// Bias is.
	PID int `json:"pid,omitempty"`
	// Start is the ELF virtual address of Code[0] (the function's
	// entry); Bias is the runtime address minus the ELF address in
	// process PID.
	Start uint64 `json:"start"`
	Bias  uint64 `json:"bias"`
	Code  []byte `json:"code"`
}

// Contains reports whether the runtime address pc lies in the copied
// code.
func (c NativeCode) Contains(pc uint64) bool {
	v := pc - c.Bias
	return v >= c.Start && v-c.Start < uint64(len(c.Code))
}

// readNativeCode reads native-code.json of the recording dir: nil when
// the recording has none (made before it existed), an empty slice when
// the collector copied nothing. More functions or larger ones than the
// bounds above are refused as invalid.
func readNativeCode(dir string) ([]NativeCode, error) {
	var code []NativeCode
	ok, err := readJSONOpt(filepath.Join(dir, NativeCodeFile), &code)
	if err != nil || !ok {
		return nil, err
	}
	if code == nil {
		code = []NativeCode{}
	}
	if len(code) > MaxNativeFunctions {
		return nil, fmt.Errorf("%s: %d functions, more than %d: %w", NativeCodeFile, len(code), MaxNativeFunctions, ErrInvalid)
	}
	for i, c := range code {
		if len(c.Code) > MaxNativeCode {
			return nil, fmt.Errorf("%s: function %d: %d bytes of code, more than %d: %w", NativeCodeFile, i, len(c.Code), MaxNativeCode, ErrInvalid)
		}
		if c.Start+uint64(len(c.Code)) < c.Start {
			return nil, fmt.Errorf("%s: function %d: code at 0x%x wraps around the address space: %w", NativeCodeFile, i, c.Start, ErrInvalid)
		}
	}
	return code, nil
}
