package accounting_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/accounting"
)

func TestJobCharge(t *testing.T) {
	t0 := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	j := accounting.JobRecord{ID: 1, Assoc: 9, QOS: "high", Start: t0, End: t0.Add(time.Hour), AllocTRES: accounting.TRES{"cpu": 2}}
	tests := []struct {
		name     string
		j        accounting.JobRecord
		from, to time.Time
		wf, wt   time.Time
	}{
		{"inside", j, t0.Add(-time.Hour), t0.Add(2 * time.Hour), t0, t0.Add(time.Hour)},
		{"window", j, t0.Add(10 * time.Minute), t0.Add(15 * time.Minute), t0.Add(10 * time.Minute), t0.Add(15 * time.Minute)},
		{"after", j, t0.Add(2 * time.Hour), t0.Add(3 * time.Hour), t0.Add(3 * time.Hour), t0.Add(3 * time.Hour)},
		{"running", accounting.JobRecord{Assoc: 9, Start: t0}, t0.Add(time.Hour), t0.Add(2 * time.Hour), t0.Add(time.Hour), t0.Add(2 * time.Hour)},
		{"pending", accounting.JobRecord{Assoc: 9}, t0, t0.Add(time.Hour), t0.Add(time.Hour), t0.Add(time.Hour)},
	}
	for _, tc := range tests {
		c := accounting.JobCharge(tc.j, tc.from, tc.to)
		assert.Equal(t, tc.wf, c.From, tc.name)
		assert.Equal(t, tc.wt, c.To, tc.name)
		assert.Equal(t, accounting.AssocID(9), c.Assoc, tc.name)
	}
	assert.Equal(t, "high", accounting.JobCharge(j, t0, t0).QOS)
}
