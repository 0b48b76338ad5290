//go:build !unix

package journal_test

import "time"

// cpuTime is not measured off Unix.
func cpuTime() time.Duration { return 0 }
