package collector

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeEvent(t *testing.T) {
	b := make([]byte, rawEventSize)
	le := binary.LittleEndian
	b[0], b[1] = kindWait, opWaitBitset
	le.PutUint16(b[2:], 74)
	le.PutUint32(b[4:], 1000)
	le.PutUint32(b[8:], 1001)
	le.PutUint32(b[12:], 1002)
	le.PutUint64(b[16:], stackLost)
	le.PutUint64(b[24:], 123456789)
	le.PutUint64(b[32:], 5000)
	le.PutUint64(b[40:], 0x7ffd0000abc0)
	got, err := decodeEvent(b)
	if err != nil {
		t.Fatal(err)
	}
	want := rawEvent{Kind: kindWait, Op: opWaitBitset, Sys: 74, PID: 1000, TID: 1001, Peer: 1002, Stack: stackLost, TS: 123456789, Dur: 5000, Addr: 0x7ffd0000abc0}
	if got != want {
		t.Errorf("decodeEvent = %+v, want %+v", got, want)
	}
	if binary.Size(rawEvent{}) != rawEventSize {
		t.Errorf("rawEvent is %d bytes, struct ct_event %d", binary.Size(rawEvent{}), rawEventSize)
	}
	if _, err := decodeEvent(b[:20]); !errors.Is(err, errBadRecord) {
		t.Errorf("short event: %v", err)
	}
}

func TestDecodeWindow(t *testing.T) {
	stack := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}
	b := make([]byte, windowHdrSize+len(stack)+3) // records are padded
	le := binary.LittleEndian
	b[0], b[1] = kindWindow, famIO
	le.PutUint16(b[2:], uint16(len(stack)))
	le.PutUint32(b[4:], 76)
	le.PutUint32(b[8:], 77)
	le.PutUint64(b[16:], 0x5555)
	le.PutUint64(b[24:], 999)
	le.PutUint64(b[32:], 0x401000)
	le.PutUint64(b[40:], 0x7ffc00001000)
	le.PutUint64(b[48:], 0x7ffc00001100)
	copy(b[windowHdrSize:], stack)
	h, data, err := decodeWindow(b)
	if err != nil {
		t.Fatal(err)
	}
	want := windowHdr{Kind: kindWindow, Family: famIO, Len: 9, PID: 76, TID: 77, Stack: 0x5555, TS: 999, IP: 0x401000, SP: 0x7ffc00001000, BP: 0x7ffc00001100}
	if h != want || !cmp.Equal(data, stack) {
		t.Errorf("decodeWindow = %+v %v", h, data)
	}
	if binary.Size(windowHdr{}) != windowHdrSize {
		t.Errorf("windowHdr is %d bytes, want %d", binary.Size(windowHdr{}), windowHdrSize)
	}
	le.PutUint16(b[2:], uint16(len(stack)+100)) // longer than the record
	if _, _, err := decodeWindow(b); !errors.Is(err, errBadRecord) {
		t.Errorf("overlong window: %v", err)
	}
	if _, _, err := decodeWindow(b[:10]); !errors.Is(err, errBadRecord) {
		t.Errorf("short window: %v", err)
	}
}

func TestNames(t *testing.T) {
	if opName(opLockPI) != "lock_pi" || opName(200) != "op200" {
		t.Error("op names")
	}
	if stateName(2) != "uninterruptible" || stateName(9) != "other" {
		t.Error("state names")
	}
	if contextName(3) != "idle" || syscallName(316) != "renameat2" || syscallName(5) != "syscall5" {
		t.Error("context or syscall names")
	}
	for i, s := range stateNames {
		if i < 3 && s == "other" {
			t.Errorf("state %d named other", i)
		}
	}
}
