package core

import "sort"

// Helpers every path uses.

// SortBy sorts s stably by less.
func SortBy[T any](s []T, less func(a, b T) bool) {
	sort.SliceStable(s, func(i, j int) bool { return less(s[i], s[j]) })
}

// Seconds converts nanoseconds to seconds.
func Seconds(ns int64) float64 { return float64(ns) / 1e9 }
