//go:build !unix

// Package cputime measures the process's CPU time, for benchmarks that
// report it next to wall time on a shared machine.
package cputime

import "time"

// Process is not measured on this platform: it returns 0.
func Process() time.Duration { return 0 }
