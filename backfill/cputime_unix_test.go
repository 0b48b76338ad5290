//go:build unix

package backfill

import (
	"syscall"
	"time"
)

// cpuTime returns the process's user+system CPU time, to report next to
// wall time on a shared machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
