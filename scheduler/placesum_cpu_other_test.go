//go:build !unix

package scheduler_test

import "time"

// processCPU returns 0: the process's CPU time is not read here.
func processCPU() time.Duration { return 0 }
