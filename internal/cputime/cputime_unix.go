//go:build unix

// Package cputime measures the process's CPU time, for benchmarks that
// report it next to wall time on a shared machine.
package cputime

import (
	"syscall"
	"time"
)

// Process returns the process's user+system CPU time.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
