//go:build linux

package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/scheduler"
)

// NodeAgent runs the jobs the scheduler starts and tells the control loop
// how they are doing. Every method is keyed by a RunKey, one per run of a
// job (a requeued job runs again under a new key), so that a control loop
// restarted after a crash can ask about the runs an earlier process of it
// launched: the agent's records outlive the control loop's process.
//
// The control loop drives it by polling (Check) once per cycle; an agent
// on another machine would implement the same interface over RPC.
type NodeAgent interface {
	// Launch starts run r. It is idempotent per r.Key: a run launched
	// before, by this process or an earlier one, is not started again and
	// Launch returns nil (Check then says how it is doing). An error means
	// the run did not start and never will under this key: the caller
	// requeues the job, which runs again under a new key.
	Launch(r Run) error
	// Check reports the state of run key.
	Check(key RunKey) (RunStatus, error)
	// Kill stops run key (its time limit was reached, it was cancelled,
	// or the scheduler no longer has it running). Killing a run that is
	// not running is not an error. Its exit is not reported as an end:
	// the scheduler already ended the job.
	Kill(key RunKey) error
	// Forget drops what the agent keeps about run key, once the scheduler
	// has recorded its end and the ledger has observed it.
	Forget(key RunKey) error
	// Runs lists the runs the agent has records of, for the control loop
	// to reconcile after a restart.
	Runs() ([]RunKey, error)
}

// RunKey names one run of a job: "<job id>.<restarts>", where restarts is
// scheduler.Job.Restarts when the run started. It is also the run's
// directory name and cgroup job name, so it is always a safe path element.
type RunKey string

// runKey returns the key of job j's current run.
func runKey(j scheduler.Job) RunKey {
	return RunKey(fmt.Sprintf("%d.%d", j.ID, j.Restarts))
}

// parseRunKey splits a key into its job ID and restart count.
func parseRunKey(k RunKey) (scheduler.JobID, int, error) {
	id, restarts, ok := strings.Cut(string(k), ".")
	if !ok {
		return 0, 0, fmt.Errorf("run key %q: want <job id>.<restarts>", k)
	}
	n, err := strconv.ParseUint(id, 10, 32)
	if err != nil || n == 0 {
		return 0, 0, fmt.Errorf("run key %q: bad job id", k)
	}
	r, err := strconv.Atoi(restarts)
	if err != nil || r < 0 || strconv.Itoa(r) != restarts {
		return 0, 0, fmt.Errorf("run key %q: bad restart count", k)
	}
	return scheduler.JobID(n), r, nil
}

// Run is what a NodeAgent needs to start one run of a job.
type Run struct {
	Key RunKey
	Job scheduler.JobID
	// Name is the job's name (the orchestrator's submission key).
	Name string
	// Command is the argv to run; Command[0] is looked up in PATH.
	Command []string
	// Alloc is the job's allocation: the agent confines the run to it
	// where it can (CPUs and memory of its first node).
	Alloc scheduler.Allocation
	// TimeLimit is the limit the job runs with (the scheduler ends it;
	// the agent passes it on as SLUICE_TIME_LIMIT).
	TimeLimit time.Duration
}

// RunState is what a NodeAgent knows of a run.
type RunState uint8

// The run states.
const (
	// RunNotLaunched: the run never started — the agent has no record of
	// it, or its launch died before the command could start; Launch
	// starts it.
	RunNotLaunched RunState = iota
	// RunRunning: the run's process is alive.
	RunRunning
	// RunExited: the run's command ended; RunStatus.ExitCode says how.
	RunExited
	// RunLost: the run's command may have started but its supervisor is
	// gone without an exit status (it was killed, or the machine
	// rebooted). The control loop requeues the job.
	RunLost
)

// String returns the state's name.
func (s RunState) String() string {
	switch s {
	case RunNotLaunched:
		return "not-launched"
	case RunRunning:
		return "running"
	case RunExited:
		return "exited"
	case RunLost:
		return "lost"
	}
	return fmt.Sprintf("RunState(%d)", uint8(s))
}

// RunStatus is the answer of NodeAgent.Check.
type RunStatus struct {
	State RunState
	// ExitCode is the command's exit code when State is RunExited: its
	// exit status, 128+n when a signal n killed it (as a shell reports
	// it), 127 when it could not be started (not found, not executable).
	ExitCode int
}
