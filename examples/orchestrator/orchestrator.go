//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/ledger"
)

// Options configure an orchestrator.
type Options struct {
	// StateDir holds everything the orchestrator keeps (see README.md).
	StateDir string
	// Period is the time between cycles.
	Period time.Duration
	// Cluster is the cluster's name in the ledger, CPUs and MemoryMiB
	// the size of its one node, "local". They are fixed when the state
	// directory is created (cluster.json); later values are ignored.
	Cluster   string
	CPUs      int
	MemoryMiB int64
	// CgroupRoot is where runs are confined (LocalOptions.CgroupRoot).
	CgroupRoot string
	// SnapshotEvery is how many events the journal holds before the
	// orchestrator compacts it with a snapshot (after a cycle); 0 never.
	SnapshotEvery uint64
	// ExitWhenIdle makes Run return once no job is pending or running
	// and the inbox is empty.
	ExitWhenIdle bool
	// Log receives what the orchestrator does; nil: the standard logger.
	Log *log.Logger
}

// clusterConfig is the part of the scheduler's configuration the state
// directory fixes: replaying the journal must rebuild the same scheduler.
type clusterConfig struct {
	Cluster   string `json:"cluster"`
	CPUs      int    `json:"cpus"`
	MemoryMiB int64  `json:"memory_mib"`
}

// schedulerConfig returns the scheduler's configuration: one node with
// the cluster's CPUs and memory, one partition, FCFS. Nothing in it reads
// outside state (no FairShareSource reading the live ledger): the
// journal's replay must see what the original run saw.
func (c clusterConfig) schedulerConfig() scheduler.Config {
	return scheduler.Config{
		Nodes:      []scheduler.NodeConfig{{Name: "local", CPUs: c.CPUs, MemoryMiB: c.MemoryMiB}},
		Partitions: []scheduler.PartitionConfig{{Name: "main", Default: true}},
	}
}

// Orchestrator is the control plane: a scheduler recovered from its
// journal, a ledger, a node agent, and the loop between them.
type Orchestrator struct {
	opt     Options
	log     *log.Logger
	cluster clusterConfig
	s       *scheduler.Scheduler
	journal *journalLog
	ledger  *accounting.BuntLedger
	rec     *ledger.Recorder
	agent   NodeAgent
	records records
	notes   requeueNotes
	lock    *os.File
	// running maps each job the scheduler has running to its run.
	running map[scheduler.JobID]RunKey
	// launched holds the runs known to be launched (by this process or
	// an earlier one).
	launched map[RunKey]bool
	// names maps job names (submission keys) to jobs.
	names map[string]scheduler.JobID
	// ended are runs whose end the scheduler recorded, forgotten (with
	// their requeue notes) once the ledger has observed it.
	ended []RunKey
}

// Open recovers the orchestrator from its state directory: the scheduler
// from the journal, the ledger's recorder from the ledger and the
// scheduler, the runs from the agent.
func Open(opt Options) (_ *Orchestrator, err error) {
	if opt.Period <= 0 {
		return nil, fmt.Errorf("orchestrator: period %v: want > 0", opt.Period)
	}
	if opt.Log == nil {
		opt.Log = log.Default()
	}
	dir, err := filepath.Abs(opt.StateDir)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: state directory: %w", err)
	}
	opt.StateDir = dir
	o := &Orchestrator{opt: opt, log: opt.Log, records: records{opt.StateDir},
		notes:   requeueNotes{filepath.Join(opt.StateDir, "requeued")},
		running: map[scheduler.JobID]RunKey{}, launched: map[RunKey]bool{}, names: map[string]scheduler.JobID{}}
	defer func() {
		if err != nil {
			o.Close()
		}
	}()
	if err := os.MkdirAll(opt.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	if o.lock, err = lockState(filepath.Join(opt.StateDir, "lock")); err != nil {
		return nil, err
	}
	if o.cluster, err = loadCluster(opt); err != nil {
		return nil, err
	}
	if o.s, o.journal, err = openJournal(filepath.Join(opt.StateDir, "journal"), o.cluster.schedulerConfig()); err != nil {
		return nil, err
	}
	if o.ledger, err = accounting.OpenBunt(filepath.Join(opt.StateDir, "ledger.db"), accounting.Config{}, accounting.BuntOptions{}); err != nil {
		return nil, err
	}
	now := o.now()
	if o.rec, err = resumeRecorder(now, o.ledger, o.cluster.Cluster, o.s, o.notes); err != nil {
		return nil, err
	}
	if o.agent, err = NewLocalAgent(filepath.Join(opt.StateDir, "runs"), LocalOptions{CgroupRoot: opt.CgroupRoot, Log: o.log}); err != nil {
		return nil, err
	}
	for _, j := range o.s.Jobs() {
		o.names[j.Spec.Name] = j.ID
		if j.State == scheduler.JobRunning {
			o.running[j.ID] = runKey(j)
		}
	}
	// Runs the scheduler no longer has running (ended before the crash,
	// after the last cycle): kill what is left of them and forget them.
	keys, err := o.agent.Runs()
	if err != nil {
		return nil, err
	}
	live := map[RunKey]bool{}
	for _, k := range o.running {
		live[k] = true
	}
	for _, k := range keys {
		if !live[k] {
			o.ended = append(o.ended, k)
		}
	}
	o.forgetEnded()
	p, r := o.s.Counts()
	o.log.Printf("recovered: %d pending, %d running, last event %s", p, r, o.journal.Last().Format(time.RFC3339Nano))
	return o, nil
}

// lockState takes the state directory's lock: one orchestrator per state.
func lockState(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	if err := flockNB(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("orchestrator: state directory %s is in use: %w", filepath.Dir(path), err)
	}
	return f, nil
}

// loadCluster reads cluster.json, or writes it from opt on first use.
func loadCluster(opt Options) (clusterConfig, error) {
	path := filepath.Join(opt.StateDir, "cluster.json")
	var c clusterConfig
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		c = clusterConfig{Cluster: opt.Cluster, CPUs: opt.CPUs, MemoryMiB: opt.MemoryMiB}
		if _, err := scheduler.New(c.schedulerConfig()); err != nil {
			return c, fmt.Errorf("orchestrator: %w", err)
		}
		if c.Cluster == "" {
			return c, errors.New("orchestrator: empty cluster name")
		}
		b, _ = json.MarshalIndent(c, "", "  ")
		return c, writeFileAtomic(path, append(b, '\n'))
	}
	if err != nil {
		return c, fmt.Errorf("orchestrator: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("orchestrator: %s: %w", path, err)
	}
	return c, nil
}

// Close releases what Open acquired (a second call does nothing).
// Running jobs keep running.
func (o *Orchestrator) Close() {
	if o.ledger != nil {
		if err := o.ledger.Close(); err != nil {
			o.log.Printf("closing the ledger: %v", err)
		}
		o.ledger = nil
	}
	if o.journal != nil {
		_ = o.journal.Close()
		o.journal = nil
	}
	if o.lock != nil {
		_ = o.lock.Close()
		o.lock = nil
	}
}

// now is the wall clock, but never before the last event journalled (a
// clock stepped back, or a journal written on a faster clock).
func (o *Orchestrator) now() time.Time {
	now := time.Now().UTC()
	if last := o.journal.Last(); now.Before(last) {
		return last
	}
	return now
}

// Run runs a cycle every Period until ctx ends (or, with ExitWhenIdle,
// until there is nothing left to do). An error is fatal: restarting
// recovers from it.
func (o *Orchestrator) Run(ctx context.Context) error {
	t := time.NewTicker(o.opt.Period)
	defer t.Stop()
	for {
		idle, err := o.Step()
		if err != nil {
			return err
		}
		if idle && o.opt.ExitWhenIdle {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Step runs one cycle: it submits what the inbox holds, cancels what is
// asked to be, turns the exits
// and losses the agent reports into Finish and Requeue events, schedules,
// records the cycle in the ledger, kills the runs the cycle ended, and
// launches the runs it started (and any the scheduler has running
// without a run: started by a cycle journalled just before a crash). It
// reports whether it found nothing to do.
func (o *Orchestrator) Step() (idle bool, err error) {
	now := o.now()
	inbox, err := o.ingest(now)
	if err != nil {
		return false, err
	}
	if err := o.cancelRequested(now); err != nil {
		return false, err
	}
	if err := o.collectEnds(now); err != nil {
		return false, err
	}
	cyc, err := o.s.Schedule(now)
	if err != nil {
		return false, fmt.Errorf("orchestrator: schedule: %w", err)
	}
	// Nothing outside the process — the ledger, a kill, a launch, a run
	// forgotten — may act on an event a power loss could still take back.
	if err := o.journal.Sync(); err != nil {
		return false, fmt.Errorf("orchestrator: %w", err)
	}
	if err := o.rec.Observe(now, cyc); err != nil {
		return false, fmt.Errorf("orchestrator: ledger: %w", err)
	}
	o.forgetEnded()
	for _, e := range cyc.Ended {
		if k, ok := o.running[e.Job]; ok {
			o.log.Printf("job %d: %s (%s): killing run %s", e.Job, e.State, e.Reason, k)
			if err := o.agent.Kill(k); err != nil {
				o.log.Printf("job %d: %v", e.Job, err)
			}
			delete(o.running, e.Job)
			o.ended = append(o.ended, k)
		}
	}
	for _, st := range cyc.Starts {
		if j, ok := o.s.Job(st.Job); ok && j.State == scheduler.JobRunning {
			o.running[j.ID] = runKey(j)
		}
	}
	pending, running := o.s.Counts()
	if err := o.launchStarted(now); err != nil {
		return false, err
	}
	snap := o.journal.snapSeq
	if err := o.journal.compact(o.s, o.opt.SnapshotEvery); err != nil {
		return false, err
	}
	if o.journal.snapSeq != snap {
		o.log.Printf("journal compacted: snapshot of event %d", o.journal.snapSeq)
	}
	o.writeStatus(now, pending, running, inbox)
	return pending == 0 && running == 0 && inbox == 0, nil
}

// ingest submits the inbox's submissions, each once: a submission whose
// name a job already has was submitted before a crash, and is only moved
// to jobs/. It returns how many it left in the inbox (none, unless one
// could not be read).
func (o *Orchestrator) ingest(now time.Time) (int, error) {
	names, err := o.records.inbox()
	if err != nil {
		return 0, fmt.Errorf("orchestrator: inbox: %w", err)
	}
	left := 0
	var accepted []string
	for _, name := range names {
		if _, ok := o.names[name]; !ok {
			sub, err := o.records.read("inbox", name)
			if err == nil {
				err = o.submit(now, sub)
			}
			if err != nil {
				o.log.Printf("submission %s rejected: %v", name, err)
				if err := o.records.move(name, "rejected"); err != nil {
					o.log.Printf("submission %s: %v", name, err)
					left++
					continue
				}
				_ = os.WriteFile(filepath.Join(o.opt.StateDir, "rejected", name+".err"), []byte(err.Error()+"\n"), 0o644)
				continue
			}
		}
		accepted = append(accepted, name)
	}
	if len(accepted) == 0 {
		return left, nil
	}
	// The submissions leave the inbox only once their Submit events are
	// on disk.
	if err := o.journal.Sync(); err != nil {
		return 0, fmt.Errorf("orchestrator: %w", err)
	}
	for _, name := range accepted {
		if err := o.records.move(name, "jobs"); err != nil {
			o.log.Printf("submission %s: %v", name, err)
			left++
		}
	}
	return left, nil
}

// cancelRequested applies the cancel requests (cancel/<name>): a job
// still pending or running is cancelled (its run is killed when it is
// forgotten, after the ledger has recorded the cancellation); a request
// for a job that already ended, or that no job has, is dropped. A request
// stays until it is applied, and applying it again after a crash is
// harmless.
func (o *Orchestrator) cancelRequested(now time.Time) error {
	names, err := o.records.cancels()
	if err != nil {
		return fmt.Errorf("orchestrator: cancel requests: %w", err)
	}
	for _, name := range names {
		id, ok := o.names[name]
		switch j, known := o.s.Job(id); {
		case !ok || !known:
			o.log.Printf("cancel %s: no such job", name)
		case j.State == scheduler.JobPending || j.State == scheduler.JobRunning || j.State == scheduler.JobSuspended:
			if err := o.s.Cancel(now, id); err != nil {
				return fmt.Errorf("orchestrator: cancel job %d: %w", id, err)
			}
			o.log.Printf("job %d: cancelled", id)
		}
	}
	if len(names) > 0 {
		// The requests go only once their Cancel events are on disk.
		if err := o.journal.Sync(); err != nil {
			return fmt.Errorf("orchestrator: %w", err)
		}
	}
	for _, name := range names {
		if err := o.records.cancelled(name); err != nil {
			return fmt.Errorf("orchestrator: cancel %s: %w", name, err)
		}
	}
	return nil
}

// submit hands one submission to the scheduler.
func (o *Orchestrator) submit(now time.Time, sub Submission) error {
	if err := sub.Validate(); err != nil {
		return err
	}
	spec, err := sub.spec()
	if err != nil {
		return err
	}
	if err := ensureAssoc(o.ledger, now, o.cluster.Cluster, sub.Account, sub.User); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	id, err := o.s.Submit(now, spec)
	if err != nil {
		return err
	}
	o.names[sub.Name] = id
	o.log.Printf("job %d: submitted %s", id, sub.Name)
	return nil
}

// collectEnds turns the ends of runs the agent reports into events: an
// exit into Finish, a lost run into Requeue. It runs before the cycle,
// so that a job that exited before its time limit (while the
// orchestrator was down, say) is finished, not timed out, and its
// resources serve the cycle.
func (o *Orchestrator) collectEnds(now time.Time) error {
	for _, id := range slices.Sorted(maps.Keys(o.running)) {
		k := o.running[id]
		j, ok := o.s.Job(id)
		if !ok || j.State != scheduler.JobRunning || runKey(j) != k {
			delete(o.running, id) // ended or requeued by an event since
			o.ended = append(o.ended, k)
			continue
		}
		st, err := o.agent.Check(k)
		if err != nil {
			o.log.Printf("job %d: %v", id, err)
			continue // asked again next cycle
		}
		switch st.State {
		case RunExited:
			if err := o.s.Finish(now, id, st.ExitCode); err != nil {
				return fmt.Errorf("orchestrator: job %d: %w", id, err)
			}
			o.log.Printf("job %d: run %s exited %d", id, k, st.ExitCode)
			delete(o.running, id)
			o.ended = append(o.ended, k)
		case RunLost:
			o.log.Printf("job %d: run %s lost (its supervisor died without an exit status)", id, k)
			if err := o.requeue(now, j, k, nil); err != nil {
				return err
			}
		case RunNotLaunched:
			if o.launched[k] {
				// This process launched it and its shim died at once.
				o.log.Printf("job %d: run %s died while starting", id, k)
				if err := o.requeue(now, j, k, j.Alloc.NodeNames()); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// launchStarted launches the runs of running jobs the agent has not
// launched: the cycle's starts, and after a restart those of a cycle
// journalled just before the crash. A launch that fails requeues the job.
func (o *Orchestrator) launchStarted(now time.Time) error {
	for _, id := range slices.Sorted(maps.Keys(o.running)) {
		k := o.running[id]
		if o.launched[k] {
			continue
		}
		j, ok := o.s.Job(id)
		if !ok {
			continue
		}
		st, err := o.agent.Check(k)
		if err != nil {
			o.log.Printf("job %d: %v", id, err)
			continue // asked again next cycle
		}
		if st.State != RunNotLaunched {
			o.launched[k] = true // launched before a restart
			continue
		}
		if err := o.launch(j, k); err != nil {
			o.log.Printf("job %d: launch failed: %v", id, err)
			if err := o.requeue(now, j, k, j.Alloc.NodeNames()); err != nil {
				return err
			}
			continue
		}
		o.launched[k] = true
	}
	return nil
}

// launch starts job j's run k.
func (o *Orchestrator) launch(j scheduler.Job, k RunKey) error {
	cmd, err := o.records.command(j.Spec.Name)
	if err != nil {
		return err
	}
	if err := o.agent.Launch(Run{Key: k, Job: j.ID, Name: j.Spec.Name, Command: cmd, Alloc: j.Alloc, TimeLimit: j.TimeLimit}); err != nil {
		return err
	}
	o.log.Printf("job %d: launched run %s", j.ID, k)
	return nil
}

// maxRestarts is how many times a job whose runs are lost or fail to
// launch is requeued; the next failure ends it as FAILED (exit code
// lostExitCode) rather than requeueing it forever. Slurm holds such a
// job instead (JobHeldAdmin, "launch failed requeued held").
const maxRestarts = 3

// lostExitCode is the exit code a job gets when its last run was lost.
const lostExitCode = 255

// requeue puts job j back in the queue after its run k was lost or could
// not be launched on nodes failedOn; the job runs again under a new run
// key. A launch failure keeps the job off the nodes it failed on
// (RequeueExcluding) where other nodes can hold it. The requeue time is
// noted first, for the ledger of a restarted orchestrator. A job
// requeued maxRestarts times already is finished as failed instead.
func (o *Orchestrator) requeue(now time.Time, j scheduler.Job, k RunKey, failedOn []string) error {
	if j.Restarts >= maxRestarts {
		o.log.Printf("job %d: requeued %d times already: ending it as failed", j.ID, j.Restarts)
		if err := o.s.Finish(now, j.ID, lostExitCode); err != nil {
			return fmt.Errorf("orchestrator: job %d: %w", j.ID, err)
		}
		delete(o.running, j.ID)
		o.ended = append(o.ended, k)
		return nil
	}
	if err := o.notes.put(k, now); err != nil {
		return fmt.Errorf("orchestrator: job %d: %w", j.ID, err)
	}
	err := scheduler.ErrUnsatisfiable
	if len(failedOn) > 0 {
		err = o.s.RequeueExcluding(now, j.ID, failedOn...)
	}
	if errors.Is(err, scheduler.ErrUnsatisfiable) {
		// A lost run, or no other node could hold the job.
		err = o.s.Requeue(now, j.ID)
	}
	if err != nil {
		return fmt.Errorf("orchestrator: job %d: %w", j.ID, err)
	}
	delete(o.running, j.ID)
	o.ended = append(o.ended, k)
	return nil
}

// forgetEnded drops the records of the ended runs at the agent, and
// their requeue notes; a run that cannot be forgotten yet (its shim is
// still exiting) is kept for the next cycle.
func (o *Orchestrator) forgetEnded() {
	keep := o.ended[:0]
	for _, k := range o.ended {
		if err := o.agent.Forget(k); err != nil {
			if !errors.Is(err, errStillRunning) {
				o.log.Printf("run %s: %v", k, err)
			}
			keep = append(keep, k)
			continue
		}
		delete(o.launched, k)
		o.notes.drop(k)
	}
	o.ended = keep
}

// status is what status.json says after each cycle.
type status struct {
	Time    time.Time `json:"time"`
	Pending int       `json:"pending"`
	Running int       `json:"running"`
	Inbox   int       `json:"inbox"`
}

func (o *Orchestrator) writeStatus(now time.Time, pending, running, inbox int) {
	b, _ := json.Marshal(status{Time: now, Pending: pending, Running: running, Inbox: inbox})
	if err := writeFileAtomic(filepath.Join(o.opt.StateDir, "status.json"), append(b, '\n')); err != nil {
		o.log.Printf("status: %v", err)
	}
}
