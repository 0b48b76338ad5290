//go:build !unix

package scheduler_test

import "time"

// cpuTime returns zero: the process's CPU time is not read on this
// system.
func cpuTime() time.Duration { return 0 }
