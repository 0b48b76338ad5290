//go:build !linux

package cputime

import "time"

// Thread is the process's CPU time (Process) where a thread's own is not
// read.
func Thread() time.Duration { return Process() }
