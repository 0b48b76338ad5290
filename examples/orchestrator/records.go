//go:build linux

package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/scheduler"
)

// Submission is a job as the submit subcommand writes it to the inbox:
// the scheduler's part of it becomes the JobSpec, the command stays in
// the orchestrator's own records (a JobSpec has no command). Its Name,
// the submission key, is unique: it becomes the job's JobSpec.Name, which
// is how the orchestrator finds a job's command (jobs/<name>.json) and
// how it knows, after a crash, that a submission in the inbox was already
// submitted.
type Submission struct {
	Name      string   `json:"name"`
	Command   []string `json:"command"`
	User      string   `json:"user"`
	Account   string   `json:"account"`
	CPUs      int      `json:"cpus,omitempty"`
	MemoryMiB int64    `json:"memory_mib,omitempty"`
	// TimeLimit is a Go duration ("10m"); empty: the partition's default.
	TimeLimit string `json:"time_limit,omitempty"`
}

// validKey reports whether k is a usable submission key: 1-64 characters
// from [A-Za-z0-9_.-], not starting with a dot (a file name everywhere).
func validKey(k string) bool {
	if k == "" || len(k) > 64 || k[0] == '.' {
		return false
	}
	return strings.IndexFunc(k, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-')
	}) < 0
}

// newKey returns a fresh submission key.
func newKey(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("j%s-%s", now.UTC().Format("20060102T150405.000000"), hex.EncodeToString(b[:]))
}

// Validate checks the submission's own fields (the scheduler checks the
// rest at Submit).
func (sub Submission) Validate() error {
	if !validKey(sub.Name) {
		return fmt.Errorf("submission: name %q: want 1-64 characters from [A-Za-z0-9_.-], not starting with a dot", sub.Name)
	}
	if len(sub.Command) == 0 || sub.Command[0] == "" {
		return fmt.Errorf("submission %s: no command", sub.Name)
	}
	if sub.User == "" || sub.Account == "" {
		return fmt.Errorf("submission %s: user and account are required", sub.Name)
	}
	if _, err := sub.spec(); err != nil {
		return err
	}
	return nil
}

// spec returns the job's JobSpec.
func (sub Submission) spec() (scheduler.JobSpec, error) {
	spec := scheduler.JobSpec{Name: sub.Name, User: sub.User, Account: sub.Account,
		CPUsPerTask: sub.CPUs, MemPerNodeMiB: sub.MemoryMiB}
	if sub.TimeLimit != "" {
		d, err := time.ParseDuration(sub.TimeLimit)
		if err != nil {
			return spec, fmt.Errorf("submission %s: time limit: %w", sub.Name, err)
		}
		spec.TimeLimit = d
	}
	return spec, nil
}

// records is the orchestrator's directory of submissions:
//
//	inbox/<name>.json     submitted, not yet handed to the scheduler
//	jobs/<name>.json      handed to the scheduler (a job named <name> exists)
//	rejected/<name>.json  refused by the scheduler, with <name>.err saying why
type records struct{ dir string }

func (r records) path(sub, name string) string { return filepath.Join(r.dir, sub, name+".json") }

// put writes a new submission to the inbox (the submit subcommand). A
// name already in use anywhere is refused.
func (r records) put(sub Submission) error {
	if err := sub.Validate(); err != nil {
		return err
	}
	for _, d := range []string{"inbox", "jobs", "rejected"} {
		if _, err := os.Stat(r.path(d, sub.Name)); err == nil {
			return fmt.Errorf("submission %s: name already used (%s)", sub.Name, d)
		}
	}
	b, err := json.MarshalIndent(sub, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(r.dir, "inbox"), 0o755); err != nil {
		return err
	}
	return writeFileAtomic(r.path("inbox", sub.Name), append(b, '\n'))
}

// inbox returns the names waiting in the inbox, oldest file first (then
// by name).
func (r records) inbox() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(r.dir, "inbox"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	type item struct {
		name string
		mod  time.Time
	}
	var items []item
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !validKey(name) || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // moved away meanwhile
		}
		items = append(items, item{name, info.ModTime()})
	}
	slices.SortFunc(items, func(a, b item) int {
		if c := a.mod.Compare(b.mod); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.name
	}
	return out, nil
}

// read reads submission name from directory sub.
func (r records) read(sub, name string) (Submission, error) {
	var s Submission
	b, err := os.ReadFile(r.path(sub, name))
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("submission %s: %w", r.path(sub, name), err)
	}
	if s.Name != name {
		return s, fmt.Errorf("submission %s: names itself %q", r.path(sub, name), s.Name)
	}
	return s, nil
}

// move moves submission name from the inbox to directory to (durably).
func (r records) move(name, to string) error {
	if err := os.MkdirAll(filepath.Join(r.dir, to), 0o755); err != nil {
		return err
	}
	if err := os.Rename(r.path("inbox", name), r.path(to, name)); err != nil {
		return err
	}
	return syncDir(filepath.Join(r.dir, to))
}

// command returns the command of the job named name: from jobs/, or from
// the inbox when the orchestrator died between submitting it and moving
// its record.
func (r records) command(name string) ([]string, error) {
	s, err := r.read("jobs", name)
	if errors.Is(err, fs.ErrNotExist) {
		s, err = r.read("inbox", name)
	}
	if err != nil {
		return nil, fmt.Errorf("command of job %q: %w", name, err)
	}
	return s.Command, nil
}

// requestCancel asks for job name to be cancelled (the cancel
// subcommand): cancel/<name>, read by the loop.
func (r records) requestCancel(name string) error {
	if !validKey(name) {
		return fmt.Errorf("cancel: name %q: want 1-64 characters from [A-Za-z0-9_.-], not starting with a dot", name)
	}
	if err := os.MkdirAll(filepath.Join(r.dir, "cancel"), 0o755); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(r.dir, "cancel", name), nil)
}

// cancels returns the names of the jobs whose cancellation is requested.
func (r records) cancels() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(r.dir, "cancel"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if validKey(e.Name()) && e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// cancelled removes the cancel request of job name, once applied.
func (r records) cancelled(name string) error {
	err := os.Remove(filepath.Join(r.dir, "cancel", name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
