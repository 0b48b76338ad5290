package scheduler

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
)

// A snapshot whose sharer lists one CPU twice in its allocation (CPUs
// [0 0], a CPU count of 2) is refused: a CPU held twice is only a CPU of
// two sharers. Accepted, the job's end would free the CPU twice and leave
// the node more free CPUs than it has.
func TestRestoreRefusesCPUTwiceInOneSharer(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := New(Config{Nodes: []NodeConfig{{Name: "n0", CPUs: 4, MemoryMiB: 1024}},
		Partitions: []PartitionConfig{{Name: "p", OverSubscribe: policy.OverSubscribeForce, OverSubscribeCount: 2}}})
	require.NoError(t, err)
	id, err := s.Submit(at, JobSpec{Tasks: 2, TimeLimit: time.Hour})
	require.NoError(t, err)
	_, err = s.Schedule(at)
	require.NoError(t, err)
	j := s.jobs[id]
	require.Equal(t, JobRunning, j.State)
	require.Equal(t, 2, j.Alloc.OverSubscribe)
	// CPU 0 twice; the node's mask and free count as a decoder would
	// check them (one CPU held).
	n := &s.nodes[0]
	j.Alloc.Nodes[0].CPUs = []int{0, 0}
	n.cpuUsed[0] = 1
	n.free[gres.CPU] = 3
	var buf bytes.Buffer
	require.NoError(t, s.Snapshot(&buf))
	_, err = Restore(&buf, RestoreOptions{})
	require.Error(t, err)
}
