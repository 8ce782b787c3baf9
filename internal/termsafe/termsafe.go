// Package termsafe makes strings that come from a profiled process or from
// an input file safe to print on a terminal. A thread name, a function or
// file name, a goroutine label or a path can hold any byte the target
// chose; printed raw, an ESC or a C1 control starts an escape sequence the
// terminal obeys (retitle the window, clear the screen, rewrite earlier
// lines, in some terminals answer back into the shell's input). Such
// characters are shown as Go-style escapes instead ("\x1b", "\u009b").
//
// Only what reaches a terminal is escaped: text reports and the TUI. JSON
// and the recording files keep every byte exact.
package termsafe

import (
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// unsafeRune reports whether r must not reach a terminal as is: C0
// controls (including ESC, newline and tab, which would break the one-line
// fields they sit in), DEL, C1 controls (U+0080–U+009F: 8-bit CSI, OSC and
// DCS in terminals that honour them), and the Unicode bidirectional
// overrides and isolates, which reorder what follows them on screen and so
// can make a name read as another.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// String returns s with every unsafe character (see above) and every byte
// that is not valid UTF-8 written as a visible escape: "\x1b", "\x9b",
// "\u202e". A string without any comes back unchanged, without copying.
func String(s string) string {
	i := firstUnsafe(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteString(`\x`)
			b.WriteString(hex2(s[i]))
		case r < 0x80 && unsafeRune(r):
			b.WriteString(`\x`)
			b.WriteString(hex2(byte(r)))
		case unsafeRune(r):
			q := strconv.QuoteRuneToASCII(r) // "'\u009b'"
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// firstUnsafe returns the byte index of the first unsafe character or
// invalid byte of s, -1 when there is none.
func firstUnsafe(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || unsafeRune(r) {
			return i
		}
		i += n
	}
	return -1
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&0xf]})
}

// Value returns a deep copy of v in which every string (in fields, slices,
// arrays, maps and behind pointers, map keys included) went through
// String. Values are never modified in place: v may be shared with other
// readers (a JSON renderer, a recording being written). Unexported fields
// are copied as they are; channels and functions are kept as the same
// values. It is meant for plain data such as an analysis result or a
// recording's metadata, just before they are rendered for a terminal.
func Value[T any](v T) T {
	rv := reflect.ValueOf(&v).Elem()
	out := reflect.New(rv.Type()).Elem()
	copyEscaped(out, rv, map[uintptr]reflect.Value{})
	return out.Interface().(T)
}

// copyEscaped sets dst (settable, of src's type) to an escaped deep copy
// of src. seen maps pointers already copied to their copies, so shared and
// cyclic structures stay shared and finite.
func copyEscaped(dst, src reflect.Value, seen map[uintptr]reflect.Value) {
	switch src.Kind() {
	case reflect.String:
		dst.SetString(String(src.String()))
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		if c, ok := seen[src.Pointer()]; ok {
			dst.Set(c)
			return
		}
		c := reflect.New(src.Type().Elem())
		seen[src.Pointer()] = c
		copyEscaped(c.Elem(), src.Elem(), seen)
		dst.Set(c)
	case reflect.Struct:
		dst.Set(src) // unexported fields as they are
		for i := 0; i < src.NumField(); i++ {
			if dst.Field(i).CanSet() {
				copyEscaped(dst.Field(i), src.Field(i), seen)
			}
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		c := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := 0; i < src.Len(); i++ {
			copyEscaped(c.Index(i), src.Index(i), seen)
		}
		dst.Set(c)
	case reflect.Array:
		for i := 0; i < src.Len(); i++ {
			copyEscaped(dst.Index(i), src.Index(i), seen)
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		c := reflect.MakeMapWithSize(src.Type(), src.Len())
		it := src.MapRange()
		for it.Next() {
			k := reflect.New(src.Type().Key()).Elem()
			copyEscaped(k, it.Key(), seen)
			e := reflect.New(src.Type().Elem()).Elem()
			copyEscaped(e, it.Value(), seen)
			c.SetMapIndex(k, e)
		}
		dst.Set(c)
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		e := reflect.New(src.Elem().Type()).Elem()
		copyEscaped(e, src.Elem(), seen)
		dst.Set(e)
	default:
		dst.Set(src)
	}
}
