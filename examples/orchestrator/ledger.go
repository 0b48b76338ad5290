//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/ledger"
)

// chargeAtEnd is the Recorder's ChargePeriod here: longer than any run,
// so every run is charged once, from its start to its end, in the same
// ledger transaction that writes its final record. That is what lets a
// restarted orchestrator know exactly what the ledger has charged for an
// open run — nothing — without the charge watermark a periodic charge
// would need (ledger.Recorder keeps it in memory only). The price is that
// fair-share usage of a running job shows only once it ends.
const chargeAtEnd = 100 * 365 * 24 * time.Hour

// ensureAssoc makes sure the ledger has the associations a job of user in
// account needs (cluster/account and cluster/account/user). The example
// registers them on first use; a real control plane would refuse jobs of
// unknown users instead (Slurm's AccountingStorageEnforce=associations).
func ensureAssoc(l accounting.Ledger, now time.Time, cluster, account, user string) error {
	return l.Update(func(tx accounting.Tx) error {
		for _, k := range []accounting.AssocKey{{Cluster: cluster, Account: account}, {Cluster: cluster, Account: account, User: user}} {
			_, err := tx.LookupAssoc(k)
			if err == nil {
				continue
			}
			if !errors.Is(err, accounting.ErrNotFound) {
				return fmt.Errorf("association %s: %w", k, err)
			}
			if _, err := tx.PutAssoc(now, accounting.Assoc{AssocKey: k}); err != nil {
				return fmt.Errorf("association %s: %w", k, err)
			}
		}
		return nil
	})
}

// requeueNotes keeps, per run, when the orchestrator requeued it
// (<dir>/<run key>: an RFC 3339 time), written before the Requeue event
// is applied. A restarted orchestrator reads it to end the ledger record
// of a run requeued after the last cycle the ledger observed.
type requeueNotes struct{ dir string }

func (n requeueNotes) put(k RunKey, at time.Time) error {
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(n.dir, string(k)), []byte(at.Format(time.RFC3339Nano)+"\n"))
}

func (n requeueNotes) get(k RunKey) (time.Time, bool) {
	b, err := os.ReadFile(filepath.Join(n.dir, string(k)))
	if err != nil {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
	return t, err == nil
}

func (n requeueNotes) drop(k RunKey) { _ = os.Remove(filepath.Join(n.dir, string(k))) }

// resumeRecorder returns a Recorder for s that carries on where the
// ledger stands after a restart. A Recorder built anew knows no running
// job: one started before the restart would never get its end recorded
// or charged. So the open records of the ledger are matched with the
// recovered scheduler, and the runs are handed to the new Recorder in a
// first Observe of a cycle listing them as starts:
//
//   - a job running (or suspended) in the scheduler: its record is
//     rewritten (the same data) and tracked from its start, which is what
//     the ledger has charged up to (nothing is charged before a run ends,
//     see chargeAtEnd) — this also records a start the scheduler made in
//     a cycle the ledger never observed;
//   - a job that ended after the last cycle the ledger observed (its
//     Finish journalled, the Observe not committed): its final record is
//     written and its run charged, once;
//   - a run requeued after the last cycle observed: its record is ended
//     as REQUEUED at the requeue time (requeueNotes) and charged up to
//     then, as the Recorder does for requeues it sees.
//
// A crash during this leaves the ledger either as it was or resumed:
// resuming again gives the same result.
func resumeRecorder(now time.Time, l accounting.Ledger, cluster string, s *scheduler.Scheduler, notes requeueNotes) (*ledger.Recorder, error) {
	rec, err := ledger.NewRecorder(now, l, cluster, s, ledger.Options{ChargePeriod: chargeAtEnd})
	if err != nil {
		return nil, err
	}
	var seed []scheduler.Start
	tracked := map[scheduler.JobID]bool{}
	for _, j := range s.Jobs() {
		if j.State == scheduler.JobRunning || j.State == scheduler.JobSuspended {
			seed = append(seed, scheduler.Start{Job: j.ID})
			tracked[j.ID] = true
		}
	}
	var open []accounting.JobRecord
	err = l.View(func(tx accounting.Tx) error {
		return tx.Jobs(accounting.JobQuery{Cluster: cluster, OpenOnly: true}, func(r accounting.JobRecord) bool {
			open = append(open, r)
			return true
		})
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: open jobs: %w", err)
	}
	var requeued []accounting.JobRecord
	for _, r := range open {
		j, ok := s.Job(scheduler.JobID(r.ID))
		switch {
		case !ok:
			// Purged from the scheduler (MinJobAge) before the ledger saw
			// its end: nothing left to record it from.
		case tracked[j.ID] && j.StartTime.Unix() == r.Start.Unix():
			// The same run: seeded above.
		case j.State == scheduler.JobPending || tracked[j.ID]:
			requeued = append(requeued, r) // that run was requeued
		default:
			seed = append(seed, scheduler.Start{Job: j.ID}) // ended
		}
	}
	if len(requeued) > 0 {
		err := l.Update(func(tx accounting.Tx) error {
			for _, r := range requeued {
				end, ok := notes.get(RunKey(fmt.Sprintf("%d.%d", r.ID, r.Restarts)))
				if !ok || end.Before(r.Start) {
					end = r.Start
				}
				r.End, r.State = end, accounting.StateRequeued
				if c := accounting.JobCharge(r, r.Start, end); c.From.Before(c.To) {
					if err := tx.Charge(c); err != nil && !errors.Is(err, accounting.ErrNotFound) {
						return fmt.Errorf("charging job %d: %w", r.ID, err)
					}
				}
				if err := tx.PutJob(r); err != nil {
					return fmt.Errorf("job %d: %w", r.ID, err)
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("ledger: ending requeued runs: %w", err)
		}
	}
	if err := rec.Observe(now, scheduler.Cycle{Now: now, Starts: seed}); err != nil {
		return nil, fmt.Errorf("ledger: resuming: %w", err)
	}
	return rec, nil
}
