package gres

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDeviceProcessesValidate(t *testing.T) {
	at := time.Unix(1700000000, 0)
	ok := DeviceProcesses{Index: 3, UUID: "GPU-x", Known: true, Processes: []ProcessSample{
		{PID: 100, SMUtil: 40, MemUtil: 10, Time: at}, {PID: 220, SMUtil: -1, MemUtil: -1},
	}}
	require.NoError(t, ok.Validate())
	require.NoError(t, DeviceProcesses{Index: 0}.Validate(), "unknown attribution, no processes")
	require.NoError(t, DeviceProcesses{Index: 0, Known: true}.Validate(), "known idle")

	for name, tc := range map[string]struct {
		d    DeviceProcesses
		want string
	}{
		"index":     {DeviceProcesses{Index: -1}, "negative index"},
		"unknown":   {DeviceProcesses{Index: 1, Processes: []ProcessSample{{PID: 5}}}, "attribution is unknown"},
		"pid":       {DeviceProcesses{Index: 1, Known: true, Processes: []ProcessSample{{PID: 0}}}, "pid 0 not positive"},
		"order":     {DeviceProcesses{Index: 1, Known: true, Processes: []ProcessSample{{PID: 9}, {PID: 4}}}, "pid 4 after pid 9"},
		"duplicate": {DeviceProcesses{Index: 1, Known: true, Processes: []ProcessSample{{PID: 9}, {PID: 9}}}, "pid 9 after pid 9"},
		"sm":        {DeviceProcesses{Index: 1, Known: true, Processes: []ProcessSample{{PID: 9, SMUtil: 100.5}}}, "SM utilization 100.5"},
		"sm nan":    {DeviceProcesses{Index: 1, Known: true, Processes: []ProcessSample{{PID: 9, SMUtil: math.NaN()}}}, "SM utilization NaN"},
		"mem":       {DeviceProcesses{Index: 1, Known: true, Processes: []ProcessSample{{PID: 9, MemUtil: -2}}}, "memory utilization -2"},
	} {
		err := tc.d.Validate()
		require.ErrorIs(t, err, ErrInvalidRequest, name)
		assert.ErrorContains(t, err, tc.want, name)
		assert.ErrorContains(t, err, "device", name)
	}
}

func TestAttributeProcesses(t *testing.T) {
	jobs := map[int]string{100: "7", 101: "7", 200: "12", 300: "12"}
	jobOf := func(pid int) (string, bool) { j, ok := jobs[pid]; return j, ok }
	devs := []DeviceProcesses{
		{Index: 0, UUID: "GPU-a", Known: true, Processes: []ProcessSample{
			{PID: 100, SMUtil: 30, MemUtil: 10}, {PID: 101, SMUtil: 25, MemUtil: -1},
			{PID: 200, SMUtil: 40, MemUtil: 5}, {PID: 999, SMUtil: 5, MemUtil: 5}, // 999: no job's
		}},
		{Index: 1, UUID: "GPU-b"}, // attribution unknown
		{Index: 2, UUID: "GPU-c", Known: true, Processes: []ProcessSample{
			{PID: 200, SMUtil: 70, MemUtil: -1}, {PID: 300, SMUtil: 60, MemUtil: -1},
		}},
		{Index: 3, UUID: "GPU-d", Known: true},
	}
	got := AttributeProcesses(devs, jobOf)
	assert.Equal(t, []DeviceShare{
		{Job: "12", Index: 0, UUID: "GPU-a", SMUtil: 40, MemUtil: 5, Processes: 1},
		{Job: "7", Index: 0, UUID: "GPU-a", SMUtil: 55, MemUtil: 10, Processes: 2},
		{Job: "12", Index: 2, UUID: "GPU-c", SMUtil: 100, MemUtil: -1, Processes: 2}, // 130 capped
	}, got)
	assert.Empty(t, AttributeProcesses(devs, func(int) (string, bool) { return "", false }))
	assert.Empty(t, AttributeProcesses(nil, jobOf))
	assert.Empty(t, AttributeProcesses(devs, nil), "a nil jobOf holds no process")
}
