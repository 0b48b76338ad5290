//go:build linux

package cputime

import (
	"time"

	"golang.org/x/sys/unix"
)

// Thread returns the calling OS thread's user+system CPU time (the
// goroutine must be locked to its thread, runtime.LockOSThread, for two
// readings to be of the same thread): a benchmark's own work without the
// garbage collector's background marking.
func Thread() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
