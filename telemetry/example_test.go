package telemetry_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/telemetry"
)

// A job on two GPUs runs flat out for a minute, then its GPUs sit idle
// while it waits on storage: after the rule's ten minutes it is
// allocated-but-idle.
func ExampleUsage() {
	start := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	rule := telemetry.Rule{IdleBelow: 5, IdleAfter: 10 * time.Minute}
	var u telemetry.Usage
	for sec := 30; sec <= 12*60; sec += 30 {
		util := 2.0 // percent, per device
		if sec <= 60 {
			util = 100
		}
		u.AddGPU(telemetry.GPUReading{Time: start.Add(time.Duration(sec) * time.Second), Devices: 2,
			UtilizationSum: 2 * util, MemoryUsedMiB: -1, PowerWatts: -1, EnergyJoules: -1}, start, rule)
	}
	fmt.Printf("busy %.0f of %.0f GPU-seconds (%.1f %%), idle for %v: idle=%v\n",
		u.BusyGPUSeconds, u.GPUSeconds, u.MeanUtilization(), u.IdleFor(), u.IsIdle(rule))
	// Output: busy 146 of 1440 GPU-seconds (10.2 %), idle for 11m0s: idle=true
}
