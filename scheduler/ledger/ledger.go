// Package ledger connects a scheduler to an accounting ledger, the way a
// control plane's loop does: it records every job the scheduler starts and
// ends (sacct-like job records), charges their allocated TRES as usage to
// their associations while they run, and feeds the decayed usage back to
// the scheduler as its fair-share tree.
//
// The ledger is also the one source of the association tree: PolicyAssocs
// converts its associations (limits, QOS lists, default QOS) for the
// scheduler's policy, FairShare feeds their shares and usage to the
// priority engine, and SyncAssocs applies later ledger changes to a
// running scheduler as PutAssoc and RemoveAssoc events.
//
// It is glue, not policy: the scheduler decides, the ledger stores, and
// this package only moves data between them at the times the caller gives.
//
//	l, _ := accounting.OpenBunt(path, accounting.Config{}, accounting.BuntOptions{})
//	cfg.Policy.Assocs, _ = ledger.PolicyAssocs(l, "cluster", cfg.Registry)
//	cfg.Priority = &scheduler.PriorityConfig{FairShare: ledger.FairShare(l, "cluster"), …}
//	s, _ := scheduler.New(cfg)
//	rec, _ := ledger.NewRecorder(now, l, "cluster", s, ledger.Options{})
//	for … { cyc, _ := s.Schedule(now); rec.Observe(now, cyc) }
package ledger

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/topology"
)

// FairShare returns a scheduler.FairShareSource that reads the association
// tree of cluster from l, with each association's decayed usage (its
// subtree's RawUsage) as of the scheduler's now.
func FairShare(l accounting.Ledger, cluster string) scheduler.FairShareSource {
	return scheduler.FairShareFunc(func(now time.Time) ([]priority.Association, error) {
		var out []priority.Association
		err := l.View(func(tx accounting.Tx) error {
			assocs := func(f func(accounting.Assoc) bool) error { return tx.Assocs(cluster, false, f) }
			return forEach(assocs, func(a accounting.Assoc) error {
				u, err := tx.Usage(a.ID, now)
				if err != nil {
					return err
				}
				pa := priority.Association{
					Account: a.Account, User: a.User, Partition: a.Partition,
					Shares: int64(a.EffectiveShares()), Usage: u.Raw,
				}
				switch {
				case a.User != "":
					pa.Parent = a.Account
				case a.Account != accounting.RootAccount:
					pa.Parent = a.ParentAccount
					if pa.Parent == "" {
						pa.Parent = accounting.RootAccount
					}
				}
				out = append(out, pa)
				return nil
			})
		})
		if err != nil {
			return nil, fmt.Errorf("ledger: fair-share tree of cluster %q: %w", cluster, err)
		}
		return out, nil
	})
}

// Options tune a Recorder.
type Options struct {
	// ChargePeriod is how often running jobs' usage is charged (Slurm
	// charges every PriorityCalcPeriod). Zero means 5 minutes. Jobs are
	// always charged up to their end when they end.
	ChargePeriod time.Duration
}

// Recorder writes what a scheduler does into a ledger. Call Observe after
// every Schedule; jobs ended by events between cycles (Finish, Cancel,
// DownNode) are recorded by the next Observe. Every job's cluster,
// account and user must have an association in the ledger (as Slurm's
// AccountingStorageEnforce=associations requires). Not safe for
// concurrent use.
type Recorder struct {
	l          accounting.Ledger
	cluster    string
	s          *scheduler.Scheduler
	period     time.Duration
	lastCharge time.Time
	running    map[scheduler.JobID]time.Time // job → charged up to
}

// NewRecorder returns a recorder for s writing to l under cluster name
// cluster, and records the cluster's capacity (for utilisation reports)
// as of now.
func NewRecorder(now time.Time, l accounting.Ledger, cluster string, s *scheduler.Scheduler, opt Options) (*Recorder, error) {
	if opt.ChargePeriod < 0 {
		return nil, fmt.Errorf("ledger: ChargePeriod %v is negative", opt.ChargePeriod)
	}
	if opt.ChargePeriod == 0 {
		opt.ChargePeriod = 5 * time.Minute
	}
	r := &Recorder{l: l, cluster: cluster, s: s, period: opt.ChargePeriod, lastCharge: now, running: map[scheduler.JobID]time.Time{}}
	var total gres.Vector
	for _, n := range s.Nodes() {
		if total == nil {
			total = make(gres.Vector, len(n.Capacity))
		}
		if err := total.AddInPlace(n.Capacity); err != nil {
			return nil, fmt.Errorf("ledger: cluster capacity: %w", err)
		}
	}
	capTRES := accounting.TRESFromVector(s.Registry(), total)
	err := l.Update(func(tx accounting.Tx) error {
		return tx.PutCapacity(accounting.Capacity{Cluster: cluster, Since: now, TRES: capTRES})
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: recording capacity: %w", err)
	}
	return r, nil
}

// Observe records a cycle's effects as of now: job records for starts and
// for jobs that ended since the last call (finished, cancelled, timed out,
// preempted, failed with their node, requeued), usage charges for ended
// jobs up to their end and, every ChargePeriod, for running jobs up to now,
// and the cycle's audit decisions.
//
// A run that ends in a requeue (Scheduler.Requeue after a launch failure,
// a requeueable job's node going down, preemption in REQUEUE mode) is
// recorded as Slurm's accounting records it: a REQUEUED record of that run
// (its start, its allocation) whose end is the requeue time, charged up to
// then. The requeue time is the cycle's requeue decision for the job
// (cyc.Decisions); without one (a requeue made by the cycle itself, or
// after the cycle and before this call), now, or the job's new start when
// it already runs again. The ledger keeps one record per job, so a job
// that runs again replaces its REQUEUED record with the new run's (sacct
// without --duplicates).
//
// All of it is one ledger transaction, and Observe is all-or-nothing: on
// an error nothing is written and the recorder is as it was before the
// call, so observing the same cycle again (once the cause is fixed) records
// what the failed call would have. A cycle never observed successfully is
// lost to the ledger.
func (r *Recorder) Observe(now time.Time, cyc scheduler.Cycle) error {
	running := maps.Clone(r.running) // r.running once the transaction commits
	charge := now.Sub(r.lastCharge) >= r.period
	requeuedAt := map[scheduler.JobID]time.Time{}
	for _, d := range cyc.Decisions {
		if d.Kind == scheduler.DecisionRequeue && !d.Time.Before(requeuedAt[d.Job]) {
			requeuedAt[d.Job] = d.Time
		}
	}
	err := r.l.Update(func(tx accounting.Tx) error {
		for _, st := range cyc.Starts {
			j, ok := r.s.Job(st.Job)
			if !ok {
				continue
			}
			rec := r.record(j)
			if j.State == scheduler.JobPending {
				// Requeued since the cycle started it (its launch failed):
				// the run is recorded from the cycle, and ended below.
				rec.Start, rec.End, rec.State = startOf(cyc, now), time.Time{}, accounting.StateRunning
			}
			stored, err := priorOf(tx, rec.ID)
			if err != nil {
				return fmt.Errorf("ledger: job %d: %w", j.ID, err)
			}
			prevEnd := rec.Start
			if at, ok := requeuedAt[j.ID]; ok && at.Before(prevEnd) {
				prevEnd = at
			}
			if from, ok := running[j.ID]; ok && stored != nil && stored.End.IsZero() {
				// Requeued and started again since the last call: the
				// earlier run, tracked since from, is charged up to its end.
				run := *stored
				run.End = prevEnd
				if err := chargeRun(tx, run, from, prevEnd); err != nil {
					return err
				}
			}
			fillGoodput(&rec, j, stored, prevEnd)
			if err := tx.PutJob(rec); err != nil {
				return fmt.Errorf("ledger: job %d: %w", j.ID, err)
			}
			running[j.ID] = rec.Start
		}
		ids := slices.Sorted(maps.Keys(running))
		for _, id := range ids {
			j, ok := r.s.Job(id)
			if !ok {
				// Purged (MinJobAge) before a call saw it end: the
				// scheduler no longer knows how it ended.
				delete(running, id)
				continue
			}
			from := running[id]
			switch {
			case j.State == scheduler.JobSuspended:
				// Suspended: no usage accrues; it stays tracked until it
				// resumes or ends.
				running[id] = now
			case j.State != scheduler.JobRunning || j.StartTime.After(from):
				// Ended, or requeued (and perhaps restarted): charge the
				// run up to its end and write its final record.
				if err := r.endRun(tx, j, from, runEnd(j, from, now, requeuedAt)); err != nil {
					return err
				}
				delete(running, id)
				if j.State == scheduler.JobRunning {
					running[id] = j.StartTime
				}
			case charge:
				if err := r.charge(tx, r.chargeRecord(j), from, now); err != nil {
					return err
				}
				running[id] = now
			}
		}
		for _, d := range cyc.Decisions {
			ad, err := d.Accounting(r.cluster)
			if errors.Is(err, scheduler.ErrNotRecordable) {
				continue // the ledger has no kind for it (time-limit ends)
			}
			if err != nil {
				return fmt.Errorf("ledger: decision for job %d: %w", d.Job, err)
			}
			if _, err := tx.PutDecision(ad); err != nil {
				return fmt.Errorf("ledger: decision for job %d: %w", d.Job, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.running = running
	if charge {
		r.lastCharge = now
	}
	return nil
}

// startOf is when cyc started its jobs: the cycle's time, or now for a
// cycle that carries none.
func startOf(cyc scheduler.Cycle, now time.Time) time.Time {
	if cyc.Now.IsZero() {
		return now
	}
	return cyc.Now
}

// runEnd is when job j's run, tracked as charged up to from, ended: its
// end time when it ended; for a requeued run, the requeue decision's time
// (requeuedAt), else now, but no later than a new start of the job. Never
// before from.
func runEnd(j scheduler.Job, from, now time.Time, requeuedAt map[scheduler.JobID]time.Time) time.Time {
	if j.State != scheduler.JobPending && j.State != scheduler.JobRunning && !j.EndTime.IsZero() {
		return j.EndTime
	}
	end := now
	if at, ok := requeuedAt[j.ID]; ok {
		end = at
	}
	if j.State == scheduler.JobRunning && j.StartTime.Before(end) {
		end = j.StartTime
	}
	if end.Before(from) {
		end = from
	}
	return end
}

// endRun charges the run of job j that the ledger holds a record of, from
// from (what is charged already) to its end, and writes its final record:
// j's own record when it ended or runs again, the stored run's record as
// REQUEUED, ended at end, when it went back to the queue.
func (r *Recorder) endRun(tx accounting.Tx, j scheduler.Job, from, end time.Time) error {
	stored, err := tx.Job(accounting.JobID(j.ID))
	if err != nil {
		return fmt.Errorf("ledger: job %d: %w", j.ID, err)
	}
	run := stored
	run.End = end
	if err := chargeRun(tx, run, from, end); err != nil {
		return err
	}
	rec := r.record(j)
	if j.State == scheduler.JobPending {
		// The requeued run's record, as sacct keeps it.
		rec = run
		requeuedRun(&rec, j)
		rec.Reason = j.Reason.String()
		rec.Restarts = uint32(j.Restarts)
	} else {
		fillGoodput(&rec, j, &stored, end)
	}
	if err := tx.PutJob(rec); err != nil {
		return fmt.Errorf("ledger: job %d: %w", j.ID, err)
	}
	if err := putStepUsage(tx, j, rec); err != nil {
		return fmt.Errorf("ledger: job %d: %w", j.ID, err)
	}
	return nil
}

// chargeRun charges run, ended at end, from from (what is charged
// already) to end.
func chargeRun(tx accounting.Tx, run accounting.JobRecord, from, end time.Time) error {
	c := accounting.JobCharge(run, from, end)
	if !c.From.Before(c.To) {
		return nil
	}
	if err := tx.Charge(c); err != nil && !errors.Is(err, accounting.ErrNotFound) {
		return fmt.Errorf("ledger: charging job %d: %w", run.ID, err)
	}
	return nil
}

// Decisions returns a scheduler.DecisionSource over the audit records in
// l, so that Explain and CompareJobs can answer for jobs that started or
// ended long ago (pass it as ExplainOptions.Records).
func Decisions(l accounting.Ledger) scheduler.DecisionSource { return decisionSource{l} }

type decisionSource struct{ l accounting.Ledger }

// JobDecisions returns the stored records of job id, oldest first.
func (d decisionSource) JobDecisions(id scheduler.JobID) ([]scheduler.Decision, error) {
	var out []scheduler.Decision
	err := d.l.View(func(tx accounting.Tx) error {
		decisions := func(f func(accounting.Decision) bool) error {
			return tx.Decisions(accounting.DecisionQuery{Job: accounting.JobID(id)}, f)
		}
		return forEach(decisions, func(ad accounting.Decision) error {
			sd, err := scheduler.DecisionFromAccounting(ad)
			if err != nil {
				return err
			}
			out = append(out, sd)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: decisions of job %d: %w", id, err)
	}
	return out, nil
}

// forEach runs query, a ledger scan that reports records to a callback,
// with fn as that callback: the first error fn returns stops the scan and
// is returned (ahead of the scan's own error).
func forEach[T any](query func(func(T) bool) error, fn func(T) error) error {
	var ferr error
	err := query(func(x T) bool {
		ferr = fn(x)
		return ferr == nil
	})
	if ferr != nil {
		return ferr
	}
	return err
}

func (r *Recorder) charge(tx accounting.Tx, rec accounting.JobRecord, from, to time.Time) error {
	stored, err := tx.Job(rec.ID)
	if err != nil {
		return fmt.Errorf("ledger: job %d: %w", rec.ID, err)
	}
	rec.Assoc = stored.Assoc
	c := accounting.JobCharge(rec, from, to)
	if !c.From.Before(c.To) {
		return nil
	}
	if err := tx.Charge(c); err != nil && !errors.Is(err, accounting.ErrNotFound) {
		return fmt.Errorf("ledger: charging job %d: %w", rec.ID, err)
	}
	return nil
}

// record converts a scheduler job into the ledger's sacct-like record.
func (r *Recorder) record(j scheduler.Job) accounting.JobRecord {
	reg := r.s.Registry()
	req, ok := r.s.RequestedTRES(j.ID) // tasks and --gpus totals counted as the job asks them
	if !ok {
		// The node count the job requires (ReqNodes: a NodeList or a
		// counted Constraint raises Spec.Nodes), not Spec.Nodes.
		req, _ = j.PerNode.Scale(int64(max(j.ReqNodes, j.Spec.Nodes, 1)))
	}
	rec := accounting.JobRecord{
		ID: accounting.JobID(j.ID), Name: j.Spec.Name, Cluster: r.cluster, User: j.Spec.User, Account: j.Spec.Account,
		Partition: j.Partition, QOS: j.Spec.QOS, Reservation: j.Spec.Reservation,
		Submit: j.SubmitTime, Eligible: j.EligibleTime, Start: j.StartTime, End: j.EndTime,
		TimeLimit: j.TimeLimit, State: state(j.State), ExitCode: max(0, min(255, j.ExitCode)),
		ReqTRES: addLicenses(accounting.TRESFromVector(reg, req), j), Reason: j.Reason.String(), Priority: int64(j.Priority),
		Restarts: uint32(j.Restarts), AllocTRES: r.allocTRES(j),
		HetJobID: accounting.JobID(j.HetJobID), HetJobOffset: uint32(max(j.HetJobOffset, 0)),
	}
	if rec.User == "" {
		rec.User = "nobody"
	}
	if len(j.Alloc.Nodes) > 0 {
		names := j.Alloc.NodeNames()
		rec.NodeList, _ = topology.CompressHostlist(names)
		for _, na := range j.Alloc.Nodes {
			if idx := na.DeviceIndices(); len(idx) > 0 { // shared devices too
				rec.GPUs = append(rec.GPUs, accounting.NodeGPUs{Node: na.Name, Indices: idx})
			}
		}
		if j.Backfilled {
			rec.Flags = []string{"SchedBackfill"}
		} else {
			rec.Flags = []string{"SchedMain"}
		}
	}
	return rec
}

// chargeRecord is the part of j's record that charge reads (accounting.
// JobCharge's fields): what a running job's periodic charge needs,
// without the rest of record's work (node list, requested TRES).
func (r *Recorder) chargeRecord(j scheduler.Job) accounting.JobRecord {
	return accounting.JobRecord{ID: accounting.JobID(j.ID), QOS: j.Spec.QOS,
		Start: j.StartTime, End: j.EndTime, AllocTRES: r.allocTRES(j)}
}

// allocTRES returns the TRES allocated to j, billing included (nil when
// it holds no nodes).
func (r *Recorder) allocTRES(j scheduler.Job) accounting.TRES {
	if len(j.Alloc.Nodes) == 0 {
		return nil
	}
	t := addLicenses(accounting.TRESFromVector(r.s.Registry(), j.Alloc.Total()), j)
	if b := int64(j.Alloc.Billing); b > 0 {
		t["billing"] = b
	}
	return t
}

// addLicenses adds the job's licenses (JobSpec.Licenses) to t as TRES
// license/<name>, as Slurm's records count them.
func addLicenses(t accounting.TRES, j scheduler.Job) accounting.TRES {
	if len(j.Spec.Licenses) == 0 {
		return t
	}
	if t == nil {
		t = accounting.TRES{}
	}
	for _, l := range j.Spec.Licenses {
		t["license/"+l.Name] += l.Count
	}
	return t
}

func state(s scheduler.JobState) accounting.JobState {
	switch s {
	case scheduler.JobPending:
		return accounting.StatePending
	case scheduler.JobRunning:
		return accounting.StateRunning
	case scheduler.JobSuspended:
		return accounting.StateSuspended
	case scheduler.JobCompleted:
		return accounting.StateCompleted
	case scheduler.JobFailed:
		return accounting.StateFailed
	case scheduler.JobCancelled:
		return accounting.StateCancelled
	case scheduler.JobTimeout:
		return accounting.StateTimeout
	case scheduler.JobNodeFail:
		return accounting.StateNodeFail
	case scheduler.JobPreempted:
		return accounting.StatePreempted
	}
	return accounting.StateFailed
}
