//go:build !race

package racebuild

// Enabled is true in a -race build.
const Enabled = false

// Scale is n in a plain build and n/div (at least 1) in a -race build:
// the size of a load that only a plain build needs at full size.
func Scale(n, div int) int { return n }
