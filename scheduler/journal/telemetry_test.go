package journal_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/journal"
	"github.com/sluicehq/sluice/telemetry"
)

// Telemetry events are journaled like any other: recovering a journal —
// from its start, or from a snapshot taken between readings — gives every
// job the usage, the counters and the idle action's outcome the original
// scheduler had, and the next reading folds the same in both.
func TestJournalReplaysTelemetry(t *testing.T) {
	for _, snapAt := range []int{0, 5} {
		for _, enc := range []journal.Encoding{journal.EncodingBinary, journal.EncodingJSON} {
			dir := t.TempDir()
			j, err := journal.Open(dir, journal.Options{Encoding: enc})
			require.NoError(t, err)
			cfg := func() (*scheduler.Scheduler, error) {
				c := clustertest.Mixed4()
				c.Telemetry.Rule = telemetry.Rule{IdleBelow: 5, IdleAfter: time.Minute}
				return scheduler.New(c)
			}
			s, err := cfg()
			require.NoError(t, err)
			s.SetEventLog(j)
			spec := scheduler.JobSpec{Partition: "h100", TimeLimit: time.Hour, GRESPerNode: []gres.Request{{Name: "gpu", Count: 4}}}
			a, err := s.Submit(t0, spec)
			require.NoError(t, err)
			b, err := s.Submit(t0, spec)
			require.NoError(t, err)
			_, err = s.Schedule(t0)
			require.NoError(t, err)
			ja, _ := s.Job(a)
			node := ja.Alloc.Nodes[0].Name
			require.NoError(t, s.SetTelemetry(t0, scheduler.TelemetryConfig{Rule: telemetry.Rule{IdleBelow: 5, IdleAfter: time.Minute},
				Action: scheduler.IdleRequeue, Grace: 30 * time.Second}))
			reading := func(k int) scheduler.TelemetryEvent {
				util := []float64{70, 80, 90, 60, 0.5, 0, 1, 0}
				devs := make([]gres.DeviceSample, 8)
				for i := range devs {
					devs[i] = gres.DeviceSample{Index: i, Utilization: util[i], MemoryUsedMiB: 512, PowerWatts: 200.5, EnergyJoules: 1000.25 * float64(k)}
				}
				return scheduler.TelemetryEvent{Node: node, Devices: devs,
					Jobs: []scheduler.JobReading{{Job: a, CPUSeconds: 3.3 * float64(k), MemoryPeakBytes: 1 << 30}, {Job: b, CPUSeconds: 0.1 * float64(k), MemoryPeakBytes: -1}}}
			}
			var acted []scheduler.JobID
			for k := 1; k <= 8; k++ {
				if k == snapAt {
					_, err := j.WriteSnapshot(s)
					require.NoError(t, err)
				}
				r, err := s.Apply(t0.Add(time.Duration(20*k)*time.Second), reading(k))
				require.NoError(t, err)
				acted = append(acted, r.Jobs...)
			}
			require.Equal(t, []scheduler.JobID{b}, acted, "the idle job is requeued after 1.5 minutes")
			require.NoError(t, j.Close())

			j2, err := journal.Open(dir, journal.Options{Encoding: enc})
			require.NoError(t, err)
			r, _, err := j2.Recover(journal.RecoverOptions{New: cfg})
			require.NoError(t, err)
			for _, id := range []scheduler.JobID{a, b} {
				want, _ := s.Job(id)
				got, _ := r.Job(id)
				require.NotNil(t, want.Usage)
				require.Equal(t, *want.Usage, *got.Usage, "job %d (snapshot at %d, %s)", id, snapAt, enc)
				require.Equal(t, want.State, got.State)
				require.Equal(t, want.Reason, got.Reason)
				require.Equal(t, want.LostWorkGPUSeconds, got.LostWorkGPUSeconds)
			}
			require.Equal(t, s.Telemetry(), r.Telemetry())
			s.SetEventLog(nil)
			next := reading(9)
			_, err = s.Apply(t0.Add(200*time.Second), next)
			require.NoError(t, err)
			_, err = r.Apply(t0.Add(200*time.Second), next)
			require.NoError(t, err)
			wa, _ := s.Job(a)
			ga, _ := r.Job(a)
			require.Equal(t, *wa.Usage, *ga.Usage)
			require.NoError(t, j2.Close())
		}
	}
}
