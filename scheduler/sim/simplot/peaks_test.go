package simplot

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler/sim"
)

// TestBucketPeaks checks that a spike shorter than a bucket is kept as
// the bucket's peak, that a value spans every bucket it lasts into, and
// that a state lasting no time does not count.
func TestBucketPeaks(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	series := []sim.Sample{
		{At: at(0), Pending: 1},
		{At: at(5), Pending: 40}, // 1 s spike inside bucket 0
		{At: at(6), Pending: 2},
		{At: at(25), Pending: 99}, // lasts no time
		{At: at(25), Pending: 3},  // holds over buckets 2 and 3
	}
	got := bucketPeaks(series, t0, at(40), 10*time.Second, func(s sim.Sample) float64 { return s.Pending })
	require.Equal(t, []float64{40, 2, 3, 3}, got)
}
