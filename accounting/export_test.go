package accounting_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
)

func exportJobs() []accounting.JobRecord {
	t0 := time.Date(2024, 3, 1, 8, 0, 0, 0, time.UTC)
	return []accounting.JobRecord{
		{ID: 101, Name: "train", Cluster: "c", User: "alice", Account: "phys", Assoc: 4, Partition: "gpu", QOS: "normal",
			Submit: t0, Eligible: t0, Start: t0.Add(time.Minute), End: t0.Add(26*time.Hour + time.Minute + 5*time.Second),
			TimeLimit: 48 * time.Hour, State: accounting.StateCompleted,
			AllocTRES: accounting.TRES{"cpu": 16, "mem": 65536, "node": 1, "billing": 26, "gres/gpu": 2},
			NodeList:  "gpu01", GPUs: []accounting.NodeGPUs{{Node: "gpu01", Indices: []int{0, 1, 2, 5}}}, Priority: 4242,
			Flags: []string{"SchedMain"}},
		{ID: 102, ArrayJobID: 100, ArrayTaskID: 2, Name: "sweep, v2", Cluster: "c", User: "bob", Account: "chem", Assoc: 5,
			Submit: t0, State: accounting.StatePending, ReqTRES: accounting.TRES{"cpu": 1}, Reason: "Priority"},
	}
}

func TestJobWriterFormats(t *testing.T) {
	fields := []string{"JobID", "jobname", "User", "State", "ExitCode", "Start", "End", "Elapsed", "Timelimit", "AllocTRES", "NNodes", "NCPUS", "NodeList", "GPUIndex", "Flags"}
	now := time.Date(2024, 3, 3, 0, 0, 0, 0, time.UTC)
	run := func(f accounting.ExportFormat, noHeader bool) string {
		var buf bytes.Buffer
		w, err := accounting.NewJobWriter(&buf, accounting.ExportOptions{Format: f, Fields: fields, NoHeader: noHeader, Now: now})
		require.NoError(t, err)
		for _, j := range exportJobs() {
			require.NoError(t, w.Write(j))
		}
		require.NoError(t, w.Close())
		return buf.String()
	}
	assert.Equal(t, `JobID|JobName|User|State|ExitCode|Start|End|Elapsed|Timelimit|AllocTRES|NNodes|NCPUS|NodeList|GPUIndex|Flags|
101|train|alice|COMPLETED|0:0|2024-03-01T08:01:00|2024-03-02T10:01:05|1-02:00:05|2-00:00:00|cpu=16,mem=64G,node=1,billing=26,gres/gpu=2|1|16|gpu01|gpu01:0-2,5|SchedMain|
100_2|sweep, v2|bob|PENDING|0:0|Unknown|Unknown|00:00:00|UNLIMITED||0|1|None assigned|||
`, run(accounting.FormatParsable, false))
	assert.Equal(t, `101|train|alice|COMPLETED|0:0|2024-03-01T08:01:00|2024-03-02T10:01:05|1-02:00:05|2-00:00:00|cpu=16,mem=64G,node=1,billing=26,gres/gpu=2|1|16|gpu01|gpu01:0-2,5|SchedMain
100_2|sweep, v2|bob|PENDING|0:0|Unknown|Unknown|00:00:00|UNLIMITED||0|1|None assigned||
`, run(accounting.FormatParsable2, true))
	csv := run(accounting.FormatCSV, false)
	assert.Contains(t, csv, "JobID,JobName,User,State")
	assert.Contains(t, csv, `100_2,"sweep, v2",bob,PENDING`)
	assert.Contains(t, csv, `"cpu=16,mem=64G,node=1,billing=26,gres/gpu=2"`)
	var back []accounting.JobRecord
	require.NoError(t, json.Unmarshal([]byte(run(accounting.FormatJSON, false)), &back))
	require.Len(t, back, 2)
	assert.Equal(t, exportJobs()[0].AllocTRES, back[0].AllocTRES)
	assert.Equal(t, accounting.StatePending, back[1].State)
	assert.True(t, exportJobs()[0].End.Equal(back[0].End))
	var empty bytes.Buffer
	w, err := accounting.NewJobWriter(&empty, accounting.ExportOptions{Format: accounting.FormatJSON})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	assert.Equal(t, "[]\n", empty.String())

	_, err = accounting.NewJobWriter(&empty, accounting.ExportOptions{Fields: []string{"JobID", "Bogus"}})
	assert.ErrorIs(t, err, accounting.ErrInvalid)
	assert.Contains(t, err.Error(), "Bogus")
	f, err := accounting.ParseExportFormat("Parsable2")
	require.NoError(t, err)
	assert.Equal(t, accounting.FormatParsable2, f)
	_, err = accounting.ParseExportFormat("xml")
	assert.ErrorIs(t, err, accounting.ErrInvalid)
	assert.Contains(t, accounting.JobFieldNames(), "ReqTRES")
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "00:00:00", 59 * time.Second: "00:00:59", 3*time.Hour + 2*time.Minute: "03:02:00",
		49 * time.Hour: "2-01:00:00", -time.Second: "00:00:00"} {
		assert.Equal(t, want, accounting.FormatDuration(d))
	}
}

func TestReportWriters(t *testing.T) {
	l, err := accounting.NewMemory(accounting.Config{NoDecay: true})
	require.NoError(t, err)
	t0 := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		if _, err := tx.PutAssoc(t0, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: "c", Account: "phys"}, Shares: 3}); err != nil {
			return err
		}
		a, err := tx.PutAssoc(t0, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: "c", Account: "phys", User: "alice"}})
		if err != nil {
			return err
		}
		if err := tx.PutCapacity(accounting.Capacity{Cluster: "c", Since: t0, TRES: accounting.TRES{"cpu": 10}}); err != nil {
			return err
		}
		j := exportJobs()[0]
		j.Assoc, j.Account, j.Submit, j.Eligible, j.Start, j.End = a.ID, "phys", t0, t0, t0, t0.Add(2*time.Hour)
		j.AllocTRES = accounting.TRES{"cpu": 5, "billing": 7}
		if err := tx.PutJob(j); err != nil {
			return err
		}
		return tx.Charge(accounting.Charge{Assoc: a.ID, TRES: j.AllocTRES, From: j.Start, To: j.End})
	}))
	var out bytes.Buffer
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		u, err := accounting.ClusterUtilization(tx, "c", t0, t0.Add(4*time.Hour), t0.Add(5*time.Hour), "cpu")
		if err != nil {
			return err
		}
		if err := accounting.WriteUtilization(&out, nil, u); err != nil {
			return err
		}
		rows, err := accounting.AccountUsage(tx, "c", t0, t0.Add(4*time.Hour), t0.Add(5*time.Hour), false)
		if err != nil {
			return err
		}
		if err := accounting.WriteAccountUsage(&out, rows, "cpu"); err != nil {
			return err
		}
		top, err := accounting.TopUsers(tx, "c", t0, t0.Add(4*time.Hour), t0.Add(5*time.Hour), "", 5)
		if err != nil {
			return err
		}
		if err := accounting.WriteTopUsers(&out, top, ""); err != nil {
			return err
		}
		tree, err := accounting.ShareTree(tx, "c", t0.Add(5*time.Hour))
		if err != nil {
			return err
		}
		return accounting.WriteShareTree(&out, tree, func(a accounting.Assoc) (float64, bool) { return 0.5, a.IsUser() })
	}))
	want := `--------------------------------------------------------------------------------
Cluster Utilization 2024-03-01T00:00:00 - 2024-03-01T03:59:59
Usage reported in TRES Hours (cpu)
--------------------------------------------------------------------------------
  Cluster     Allocated        Down   PLND Down          Idle     Planned  Reported
        c  10.0(25.00%)  0.0(0.00%)  0.0(0.00%)  30.0(75.00%)  0.0(0.00%)      40.0
Account  User   Jobs  cpu-hours  billing-hours
root            1     10.0       14.0
 phys           1     10.0       14.0
  phys   alice  1     10.0       14.0
Rank  User   Accounts  Jobs  cpu-hours
1     alice  phys      1     10.0
Account  User   RawShares  NormShares  RawUsage  NormUsage  FairShare
root            1          1.000000    50400     1.000000
 phys           3          1.000000    50400     1.000000
  phys   alice  1          1.000000    50400     1.000000   0.500000
`
	assert.Equal(t, want, out.String())
}
