// Package units formats the numbers, durations and shares of every output
// of contend in one place: the spaced forms of the text report and of the
// analyzer's headlines, evidence and suggestions ("64.4 s", "1,234,567",
// "43%"), and the compact forms of the TUI's narrow columns ("4.21s",
// "12.3k"). It formats only; figures are computed where they belong.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Float renders x with at most three significant digits and no trailing
// zeros: 1234 → "1234", 64.43 → "64.4", 5.678 → "5.68", 1.20 → "1.2".
// Below 0.01 it keeps one significant digit (0.0042 → "0.004") rather
// than round a small figure to "0".
func Float(x float64) string {
	var s string
	switch ax := math.Abs(x); {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return strconv.FormatFloat(x, 'f', -1, 64)
	case ax >= 100:
		s = fmt.Sprintf("%.0f", x)
	case ax >= 10:
		s = fmt.Sprintf("%.1f", x)
	case ax >= 0.01 || ax == 0:
		s = fmt.Sprintf("%.2f", x)
	default:
		s = fmt.Sprintf("%.*f", decimalsFor1Digit(ax), x)
	}
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// decimalsFor1Digit is how many decimals show the first significant
// digit of ax (0 < ax < 0.01).
func decimalsFor1Digit(ax float64) int {
	return min(int(math.Ceil(-math.Log10(ax)+1e-9)), 20)
}

// Count renders a count with thousands separators: 1234567 →
// "1,234,567".
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Rate renders a rate: whole and grouped from 100 up ("4,384"), with
// Float's three significant digits below ("21.5").
func Rate(x float64) string {
	if x >= 100 {
		return Count(int64(x + 0.5))
	}
	return Float(x)
}

// Percent renders a share as a percentage: 0.432 → "43%", 0.004 →
// "0.4%".
func Percent(x float64) string {
	p := x * 100
	if p > 0 && p < 1 {
		return fmt.Sprintf("%.1f%%", p)
	}
	return fmt.Sprintf("%.0f%%", p)
}

// Seconds renders seconds with a unit that keeps two or three
// significant digits: "64.4 s", "340 ms", "12 µs", "850 ns".
func Seconds(s float64) string {
	return Duration(time.Duration(s * 1e9))
}

// Duration renders a duration like Seconds.
func Duration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0 s"
	case d >= time.Second:
		return Float(d.Seconds()) + " s"
	case d >= time.Millisecond:
		return Float(float64(d)/1e6) + " ms"
	case d >= time.Microsecond:
		return Float(float64(d)/1e3) + " µs"
	}
	return fmt.Sprintf("%d ns", int64(d))
}

// CompactSeconds renders seconds in at most six cells, unit attached,
// with three significant figures: "850µs", "12.3ms", "4.21s", "312s"; 0
// (or less) is "0".
func CompactSeconds(s float64) string {
	switch {
	case s <= 0 || math.IsNaN(s):
		return "0"
	case s < 1e-3:
		return fmt.Sprintf("%.0fµs", s*1e6)
	case s < 1e-2:
		return fmt.Sprintf("%.2fms", s*1e3)
	case s < 1e-1:
		return fmt.Sprintf("%.1fms", s*1e3)
	case s < 1:
		return fmt.Sprintf("%.0fms", s*1e3)
	case s < 10:
		return fmt.Sprintf("%.2fs", s)
	case s < 100:
		return fmt.Sprintf("%.1fs", s)
	default:
		return fmt.Sprintf("%.0fs", s)
	}
}

// CompactDuration renders a duration like CompactSeconds, in
// nanoseconds below a microsecond ("640ns").
func CompactDuration(d time.Duration) string {
	if d > 0 && d < time.Microsecond {
		return fmt.Sprintf("%dns", d.Nanoseconds())
	}
	return CompactSeconds(d.Seconds())
}

// CompactCount renders a count in at most five cells: "980", "12.3k",
// "4.5M", "1.2G".
func CompactCount(n uint64) string {
	switch {
	case n < 10000:
		return strconv.FormatUint(n, 10)
	case n < 1e6:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	case n < 1e9:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	default:
		return fmt.Sprintf("%.1fG", float64(n)/1e9)
	}
}

// Plural returns word for a count of one and word+"s" for any other: the
// English of every noun contend counts (thread, goroutine, lock, wait).
func Plural[N ~int | ~int64 | ~uint64](n N, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
