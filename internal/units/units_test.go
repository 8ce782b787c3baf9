package units

import (
	"math"
	"testing"
	"time"
)

func TestSpacedForms(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Float(1234), "1234"}, {Float(64.43), "64.4"}, {Float(5.678), "5.68"}, {Float(1.2), "1.2"},
		{Float(0), "0"}, {Float(0.0042), "0.004"}, {Float(0.001), "0.001"}, {Float(-12.34), "-12.3"},
		{Float(0.01), "0.01"}, {Float(math.NaN()), "NaN"},
		{Count(0), "0"}, {Count(999), "999"}, {Count(1000), "1,000"}, {Count(1234567), "1,234,567"}, {Count(-4384), "-4,384"},
		{Rate(4383.6), "4,384"}, {Rate(21.54), "21.5"}, {Rate(99.5), "99.5"},
		{Percent(0.432), "43%"}, {Percent(0.004), "0.4%"}, {Percent(0), "0%"}, {Percent(1.5), "150%"},
		{Seconds(64.43), "64.4 s"}, {Seconds(0.34), "340 ms"}, {Seconds(12e-6), "12 µs"}, {Seconds(0), "0 s"},
		{Duration(850), "850 ns"}, {Duration(1500 * time.Millisecond), "1.5 s"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestCompactForms(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{CompactSeconds(850e-6), "850µs"}, {CompactSeconds(0.0123), "12.3ms"}, {CompactSeconds(4.21), "4.21s"},
		{CompactSeconds(312), "312s"}, {CompactSeconds(0), "0"}, {CompactSeconds(0.005), "5.00ms"},
		{CompactDuration(640), "640ns"}, {CompactDuration(2 * time.Second), "2.00s"},
		{CompactCount(980), "980"}, {CompactCount(12345), "12.3k"}, {CompactCount(4_500_000), "4.5M"}, {CompactCount(1_200_000_000), "1.2G"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "threads"}, {1, "thread"}, {2, "threads"}, {-1, "threads"}} {
		if got := Plural(tc.n, "thread"); got != tc.want {
			t.Errorf("Plural(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
