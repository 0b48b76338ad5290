package accounting_test

import (
	"fmt"
	"log"
	"os"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/telemetry"
)

// A recorder writes each job's usage with its record; the reports then
// say how much of the allocated GPU time did work that was kept.
func ExampleGPUUsage() {
	l, err := accounting.NewMemory(accounting.Config{NoDecay: true})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	day := time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)
	err = l.Update(func(tx accounting.Tx) error {
		for _, k := range []accounting.AssocKey{{Cluster: "hpc", Account: "ml"}, {Cluster: "hpc", Account: "ml", User: "ana"}} {
			if _, err := tx.PutAssoc(day, accounting.Assoc{AssocKey: k}); err != nil {
				return err
			}
		}
		start := day.Add(time.Hour)
		// 8 GPUs for 2 hours (16 GPU-hours), 80 % busy; its first run
		// (4 GPU-hours) was preempted and lost.
		return tx.PutJob(accounting.JobRecord{ID: 1, Cluster: "hpc", User: "ana", Account: "ml", QOS: "normal", Partition: "gpu",
			Submit: day, Start: start, End: start.Add(2 * time.Hour), State: accounting.StateCompleted,
			AllocTRES: accounting.TRES{"gres/gpu": 8}, Restarts: 1, LaunchAttempts: 2, Quality: 1,
			PriorGPUSeconds: 4 * 3600, LostGPUSeconds: 4 * 3600,
			Usage: telemetry.Usage{Samples: 300, First: day.Add(30 * time.Minute), Last: start.Add(2 * time.Hour),
				GPUSeconds: 20 * 3600, BusyGPUSeconds: 16 * 3600, CoveredSeconds: 9000, EnergyJoules: 36e6}})
	})
	if err != nil {
		log.Fatal(err)
	}
	err = l.View(func(tx accounting.Tx) error {
		rep, err := accounting.GPUUsage(tx, "hpc", day, day.Add(24*time.Hour))
		if err != nil {
			return err
		}
		fmt.Printf("goodput %.0f%%\n", 100*rep.Total.Goodput())
		return accounting.WriteGoodput(os.Stdout, rep.Total)
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// goodput 64%
	// Goodput               64.00%  (useful / allocated GPU-hours of measured jobs)
	// Useful GPU-hours      12.8
	// Busy GPU-hours        16.0
	// Measured GPU-hours    20.0  (1 of 1 jobs)
	// Unmeasured GPU-hours  0.0
	// Lost GPU-hours        4.0
	// Energy (kWh)          10.00
}
