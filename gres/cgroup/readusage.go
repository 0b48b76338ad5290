//go:build linux

package cgroup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"

	"github.com/sluicehq/sluice/gres"
)

// Usage reads what the cgroup of a job (step == "") or of one of its
// steps has used so far: CPU time from cpu.stat (usage_usec, user_usec,
// system_usec), memory in use from memory.current and the peak from
// memory.peak. Readings are cumulative, as the kernel counts them; a file
// the kernel does not provide reads as -1 (memory.peak before Linux
// 5.19, the memory files without the memory controller).
//
// It fails, naming the job and step, with gres.ErrInvalidAllocation on a
// bad name, gres.ErrJobNotApplied when the cgroup does not exist, an
// error wrapping ErrMalformedFile (naming the file and line) when a file
// holds what the kernel does not write, the read error otherwise, and
// ctx.Err() when ctx is done first. The cgroup may hold no process (the
// readings of processes that have left stay counted).
func (e *Enforcer) Usage(ctx context.Context, job, step string) (Usage, error) {
	if err := ctx.Err(); err != nil {
		return unknownUsage, err
	}
	dir, err := e.cfg.JobDir(job, step)
	if err != nil {
		return unknownUsage, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !exists(dir) {
		return unknownUsage, fmt.Errorf("cgroup: usage of %s: %w", who(job, step), gres.ErrJobNotApplied)
	}
	u, err := readUsage(dir)
	if err != nil {
		return unknownUsage, fmt.Errorf("cgroup: usage of %s: %w", who(job, step), err)
	}
	return u, nil
}

// ReadUsage reads the usage files of the cgroup directory dir (cpu.stat,
// memory.current, memory.peak) as Enforcer.Usage does for a job's: for
// an agent that reads cgroups the Enforcer did not create (a container
// runtime's, say). A missing file leaves its readings unknown (-1); a
// garbled one fails with ErrMalformedFile naming the file and the line;
// a dir that does not exist, or is not a directory, fails (wrapping
// fs.ErrNotExist in the first case) rather than reading as all unknown.
func ReadUsage(dir string) (Usage, error) {
	if fi, err := os.Stat(dir); err != nil {
		return unknownUsage, fmt.Errorf("cgroup: usage of %s: %w", dir, err)
	} else if !fi.IsDir() {
		return unknownUsage, fmt.Errorf("cgroup: usage of %s: not a directory", dir)
	}
	u, err := readUsage(dir)
	if err != nil {
		return unknownUsage, fmt.Errorf("cgroup: usage of %s: %w", dir, err)
	}
	return u, nil
}

// readUsage reads the usage files of the cgroup at dir.
func readUsage(dir string) (Usage, error) {
	u := unknownUsage
	b, err := readFileMax(dir, "cpu.stat", maxFileBytes)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return u, err
	}
	if err == nil {
		if err := parseCPUStat(b, &u); err != nil {
			return u, fmt.Errorf("%s: %w", dir, err)
		}
	}
	for _, f := range []struct {
		name string
		to   *int64
	}{{"memory.current", &u.MemoryBytes}, {"memory.peak", &u.MemoryPeakBytes}} {
		b, err := readFileMax(dir, f.name, maxFileBytes)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return u, err
		}
		if *f.to, err = parseSingle(f.name, b); err != nil {
			return u, fmt.Errorf("%s: %w", dir, err)
		}
	}
	return u, nil
}

// PIDs returns the processes in the cgroup of a job (step == "": with
// its steps') or of a step, sorted and without duplicates, read from the
// cgroup.procs of the cgroup and every cgroup below it. An agent maps
// the PIDs a device driver reports (gres.ProcessSampler) to the job
// holding them with it. The list is a snapshot: processes start and exit
// meanwhile. Processes outside the caller's PID namespace, which the
// kernel lists as 0, are left out. Errors are Usage's, a garbled
// cgroup.procs naming its line.
func (e *Enforcer) PIDs(ctx context.Context, job, step string) ([]int, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir, err := e.cfg.JobDir(job, step)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !exists(dir) {
		return nil, fmt.Errorf("cgroup: processes of %s: %w", who(job, step), gres.ErrJobNotApplied)
	}
	var pids []int
	err = filepath.WalkDir(dir, func(p string, ent fs.DirEntry, err error) error {
		if err != nil {
			if p != dir && errors.Is(err, fs.ErrNotExist) {
				return nil // a step removed meanwhile
			}
			return err
		}
		if !ent.IsDir() {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		b, err := readFileMax(p, "cgroup.procs", maxProcsBytes)
		if errors.Is(err, fs.ErrNotExist) && p != dir {
			return nil
		}
		if err != nil {
			return err
		}
		if pids, err = parsePIDs(pids, b); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cgroup: processes of %s: %w", who(job, step), err)
	}
	slices.Sort(pids)
	return slices.Compact(pids), nil
}

// readFileMax reads dir/name through opencontainers' confined open
// (openat2 beneath the cgroup mount where the kernel has it), up to limit
// bytes: a larger file is malformed.
func readFileMax(dir, name string, limit int) ([]byte, error) {
	f, err := cgroups.OpenFile(dir, name, unix.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, name), err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, name), err)
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%w: %s: larger than %d bytes", ErrMalformedFile, filepath.Join(dir, name), limit)
	}
	return b, nil
}

// who names a job or step in an error.
func who(job, step string) string {
	if step == "" {
		return fmt.Sprintf("job %q", job)
	}
	return fmt.Sprintf("job %q step %q", job, step)
}
