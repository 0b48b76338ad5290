package driverkit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/internal/driverkit"
)

// A health watcher rereads its counters until one changes: Poll checks
// at once, then every interval, and returns the first events.
func ExamplePoll() {
	reads := 0
	check := func() []gres.HealthEvent {
		reads++
		if reads < 3 {
			return nil
		}
		return []gres.HealthEvent{{Index: 2, Reason: "error counter rose"}}
	}
	evs, err := driverkit.Poll(context.Background(), time.Minute, time.Millisecond, check)
	fmt.Println(evs, err, reads)
	// Output:
	// [{2  false error counter rose}] <nil> 3
}
