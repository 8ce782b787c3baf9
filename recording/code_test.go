package recording

import (
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The copied native code survives a write and a read; a recording
// without it reads as nil (made before it was copied), one whose
// collector copied nothing as empty.
func TestNativeCodeRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name string
		code []NativeCode
	}{
		{"none kept", nil},
		{"looked for, none hot", []NativeCode{}},
		{"two functions", []NativeCode{
			{Module: "spin", BuildID: "985d094e", Name: "relay_on_message", PID: 7, Start: 0x1620, Bias: 0x55be79b0b000, Code: []byte{0x8b, 0x05, 0xaa, 0x2a, 0, 0, 0x85, 0xc0, 0x75, 0xf6}},
			{Module: "libc.so.6", Name: "pthread_spin_lock", Start: 0x9c000, Bias: 0x7f0000000000, Code: []byte{0xf3, 0x90}},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "rec")
			if err := Write(dir, &Recording{Meta: Meta{Source: SourceLive, PID: 1}, Locks: []LockStat{}, NativeCode: c.code}); err != nil {
				t.Fatal(err)
			}
			back, err := Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			if (back.NativeCode == nil) != (c.code == nil) {
				t.Fatalf("native code %v after the round trip, want %v", back.NativeCode, c.code)
			}
			if diff := cmp.Diff(c.code, back.NativeCode); diff != "" {
				t.Errorf("native code (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadRejectsOversizedNativeCode: native-code.json holding more
// functions, or larger ones, than a collector copies is refused as
// invalid, naming the file and the bound, before anything reads the code.
func TestReadRejectsOversizedNativeCode(t *testing.T) {
	fn := func(n int) string {
		return fmt.Sprintf(`{"module":"m","name":"f","start":4096,"bias":0,"code":%q}`, base64.StdEncoding.EncodeToString(make([]byte, n)))
	}
	many := make([]string, MaxNativeFunctions+1)
	for i := range many {
		many[i] = fn(4)
	}
	for _, c := range []struct{ name, json, want string }{
		{"too many functions", "[" + strings.Join(many, ",") + "]", fmt.Sprintf("%d functions, more than %d", MaxNativeFunctions+1, MaxNativeFunctions)},
		{"too large a function", "[" + fn(MaxNativeCode+1) + "]", fmt.Sprintf("%d bytes of code, more than %d", MaxNativeCode+1, MaxNativeCode)},
		{"wraps around", `[{"module":"m","name":"f","start":18446744073709551615,"bias":0,"code":"AAAA"}]`, "wraps around"},
		{"not JSON", `[{"module":`, NativeCodeFile},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := minimalDir(t)
			writeTestFile(t, dir, NativeCodeFile, c.json)
			_, err := Read(dir)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), NativeCodeFile) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %s invalid: %s", err, NativeCodeFile, c.want)
			}
		})
	}
}

// Contains maps a runtime address through the copy's load bias.
func TestNativeCodeContains(t *testing.T) {
	c := NativeCode{Start: 0x1000, Bias: 0x7f0000000000, Code: make([]byte, 16)}
	for _, tc := range []struct {
		pc   uint64
		want bool
	}{{0x7f0000001000, true}, {0x7f000000100f, true}, {0x7f0000001010, false}, {0x7f0000000fff, false}, {0x1000, false}, {0, false}} {
		if got := c.Contains(tc.pc); got != tc.want {
			t.Errorf("Contains(0x%x) = %v, want %v", tc.pc, got, tc.want)
		}
	}
}
