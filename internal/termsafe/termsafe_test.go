package termsafe

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"relay_thread", "relay_thread"},
		{"naïve µs 线程", "naïve µs 线程"},
		// OSC retitle and clear screen, as a hostile thread name.
		{"\x1b]0;pwned\x07\x1b[2J", `\x1b]0;pwned\x07\x1b[2J`},
		{"a\nb\tc\rd", `a\x0ab\x09c\x0dd`},
		{"del\x7f", `del\x7f`},
		// C1 CSI as a rune and as a lone byte (invalid UTF-8).
		{"x\u009b2J", `x\u009b2J`},
		{"x\x9b2J", `x\x9b2J`},
		{"evil\u202efdp.exe", `evil\u202efdp.exe`},
		{"", ""},
	} {
		if got := String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzString checks what must hold for any input: nothing a terminal
// acts on survives, the result is valid UTF-8, and safe input is kept.
func FuzzString(f *testing.F) {
	f.Add("\x1b]0;x\x07")
	f.Add("plain")
	f.Add("\xc2\x9b\xff")
	f.Fuzz(func(t *testing.T, s string) {
		got := String(s)
		if !utf8.ValidString(got) {
			t.Fatalf("String(%q) = %q is not valid UTF-8", s, got)
		}
		for _, r := range got {
			if unsafeRune(r) {
				t.Fatalf("String(%q) = %q keeps %U", s, got, r)
			}
		}
		if firstUnsafe(s) < 0 && got != s {
			t.Fatalf("safe %q changed to %q", s, got)
		}
	})
}

type inner struct {
	Name string
	tag  string
}

type outer struct {
	Title   string
	Items   []inner
	Ptr     *inner
	Shared  *inner
	Labels  map[string]string
	Any     any
	Fixed   [2]string
	When    time.Time
	Count   int
	private string
}

func TestValue(t *testing.T) {
	esc := "\x1b[2J"
	sh := &inner{Name: esc}
	in := outer{
		Title:   esc,
		Items:   []inner{{Name: esc, tag: esc}},
		Ptr:     &inner{Name: esc},
		Shared:  sh,
		Labels:  map[string]string{esc: esc},
		Any:     esc,
		Fixed:   [2]string{esc, "ok"},
		When:    time.Unix(5, 0),
		Count:   3,
		private: esc,
	}
	out := Value(in)
	want := `\x1b[2J`
	if out.Title != want || out.Items[0].Name != want || out.Ptr.Name != want || out.Shared.Name != want ||
		out.Labels[want] != want || out.Any != want || out.Fixed[0] != want || out.Fixed[1] != "ok" {
		t.Errorf("exported strings not escaped: %+v", out)
	}
	if out.Items[0].tag != esc || out.private != esc || !out.When.Equal(in.When) || out.Count != 3 {
		t.Errorf("unexported fields or plain values changed: %+v", out)
	}
	// The input is never modified.
	if in.Title != esc || in.Items[0].Name != esc || in.Ptr.Name != esc || sh.Name != esc || in.Labels[esc] != esc {
		t.Errorf("input modified: %+v", in)
	}
	if strings.Contains(out.Title, "\x1b") {
		t.Error("ESC survived")
	}
}

func TestValueCycle(t *testing.T) {
	type node struct {
		Name string
		Next *node
	}
	a := &node{Name: "\x1b"}
	a.Next = a
	b := Value(a)
	if b.Name != `\x1b` || b.Next != b {
		t.Errorf("cycle not kept: %+v", b)
	}
}
