package scheduler_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
)

func TestTelemetryStepsKeepTheirOwnUsage(t *testing.T) {
	cfg := clustertest.Mixed4()
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	t0 := clustertest.Epoch
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "h100", TimeLimit: time.Hour, GRESPerNode: []gres.Request{{Name: "gpu", Count: 2}}})
	mustSchedule(t, s, t0)
	j, _ := s.Job(id)
	node, dev := j.Alloc.Nodes[0].Name, j.Alloc.Nodes[0].Devices
	for k := 1; k <= 3; k++ {
		require.NoError(t, noJobs(s.ReportTelemetry(t0.Add(time.Duration(30*k)*time.Second), scheduler.TelemetryEvent{Node: node, Jobs: []scheduler.JobReading{
			{Job: id, CPUSeconds: 10 * float64(k), MemoryPeakBytes: 1 << 30},
			{Job: id, Step: "batch", CPUSeconds: float64(k), MemoryPeakBytes: 1 << 20},
			{Job: id, Step: "0", CPUSeconds: 8 * float64(k), MemoryPeakBytes: 1 << 29,
				GPUs: []scheduler.JobGPUReading{{Index: dev[0], Utilization: 80}, {Index: dev[1], Utilization: 60}}},
		}})))
	}
	j, _ = s.Job(id)
	require.Len(t, j.Steps, 2)
	assert.Equal(t, "batch", j.Steps[0].Step, "in the order first read")
	assert.InDelta(t, 3, j.Steps[0].Usage.CPUSeconds, 1e-9, "the counter from 0 at the step's start")
	assert.Equal(t, int64(1<<20), j.Steps[0].Usage.MemoryPeakBytes)
	assert.False(t, j.Steps[0].Usage.Measured(), "no GPU reading of its own")
	st := j.Steps[1].Usage
	assert.InDelta(t, 24, st.CPUSeconds, 1e-9)
	assert.InDelta(t, 70, st.MeanUtilization(), 1e-9)
	assert.InDelta(t, 2*90*0.7, st.BusyGPUSeconds, 1e-9)
	assert.InDelta(t, 30, j.Usage.CPUSeconds, 1e-9, "the job's cgroup, not the sum of its steps")
	assert.False(t, j.Usage.Measured(), "a step's GPU reading is the step's")

	// JSON and snapshots carry the steps.
	b, err := json.Marshal(j)
	require.NoError(t, err)
	reg, err := scheduler.NewRegistry(cfg.Nodes)
	require.NoError(t, err)
	back, err := scheduler.ParseJobJSON(reg, b)
	require.NoError(t, err)
	assert.Equal(t, j.Steps, back.Steps)
	var buf bytes.Buffer
	require.NoError(t, s.Snapshot(&buf))
	r, err := scheduler.Restore(&buf, scheduler.RestoreOptions{})
	require.NoError(t, err)
	rj, _ := r.Job(id)
	assert.Equal(t, j.Steps, rj.Steps)

	// A step read twice in one event is refused; steps beyond MaxSteps
	// are not kept.
	_, err = s.ReportTelemetry(t0.Add(2*time.Minute), scheduler.TelemetryEvent{Node: node, Jobs: []scheduler.JobReading{
		{Job: id, Step: "0", CPUSeconds: -1, MemoryPeakBytes: -1}, {Job: id, Step: "0", CPUSeconds: -1, MemoryPeakBytes: -1}}})
	assert.ErrorIs(t, err, scheduler.ErrInvalidEvent)
	// So is a step name the ledger could not store.
	for _, bad := range []string{"a b", "0,1", "x|y", "tab\t", strings.Repeat("s", 65), "\xff"} {
		_, err = s.ReportTelemetry(t0.Add(2*time.Minute), scheduler.TelemetryEvent{Node: node, Jobs: []scheduler.JobReading{
			{Job: id, Step: bad, CPUSeconds: 1, MemoryPeakBytes: -1}}})
		assert.ErrorIs(t, err, scheduler.ErrInvalidEvent, "step %q", bad)
	}
	var many []scheduler.JobReading
	for k := range scheduler.MaxSteps + 5 {
		many = append(many, scheduler.JobReading{Job: id, Step: strconv.Itoa(k + 1), CPUSeconds: -1, MemoryPeakBytes: -1})
	}
	require.NoError(t, noJobs(s.ReportTelemetry(t0.Add(3*time.Minute), scheduler.TelemetryEvent{Node: node, Jobs: many})))
	j, _ = s.Job(id)
	assert.Len(t, j.Steps, scheduler.MaxSteps)

	// A new run starts with no steps.
	require.NoError(t, s.Requeue(t0.Add(4*time.Minute), id))
	mustSchedule(t, s, t0.Add(5*time.Minute))
	j, _ = s.Job(id)
	assert.Empty(t, j.Steps)
	assert.InDelta(t, 30, j.Usage.CPUSeconds, 1e-9, "the job's usage keeps its past runs")
}

// A step's GPU reading counts only the devices its job holds on the node,
// as the job's own reading does; a reading naming a device twice is
// refused, and the refused event changes nothing.
func TestTelemetryStepGPUsAreTheJobsDevicesOnce(t *testing.T) {
	s, err := scheduler.New(clustertest.Mixed4())
	require.NoError(t, err)
	t0 := clustertest.Epoch
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "h100", TimeLimit: time.Hour, GRESPerNode: []gres.Request{{Name: "gpu", Count: 1}}})
	mustSchedule(t, s, t0)
	j, _ := s.Job(id)
	node, dev := j.Alloc.Nodes[0].Name, j.Alloc.Nodes[0].Devices[0]
	other := (dev + 1) % 8
	_, err = s.ReportTelemetry(t0.Add(30*time.Second), scheduler.TelemetryEvent{Node: node, Jobs: []scheduler.JobReading{
		{Job: id, Step: "0", CPUSeconds: -1, MemoryPeakBytes: -1,
			GPUs: []scheduler.JobGPUReading{{Index: dev, Utilization: 50}, {Index: dev, Utilization: 50}}}}})
	require.ErrorIs(t, err, scheduler.ErrInvalidEvent)
	j, _ = s.Job(id)
	assert.Empty(t, j.Steps, "the refused event changed nothing")

	require.NoError(t, noJobs(s.ReportTelemetry(t0.Add(time.Minute), scheduler.TelemetryEvent{Node: node, Jobs: []scheduler.JobReading{
		{Job: id, Step: "0", CPUSeconds: -1, MemoryPeakBytes: -1,
			GPUs: []scheduler.JobGPUReading{{Index: dev, Utilization: 50}, {Index: other, Utilization: 100}}}}})))
	j, _ = s.Job(id)
	require.Len(t, j.Steps, 1)
	st := j.Steps[0].Usage
	assert.InDelta(t, 60, st.GPUSeconds, 1e-9, "one device (the job's) × one minute")
	assert.InDelta(t, 50, st.MeanUtilization(), 1e-9, "the device the job does not hold is not the step's")
}
