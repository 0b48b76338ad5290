package cgroup

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/gres/internal/sysfs"
)

// ErrMalformedFile reports a cgroup file whose contents are not what the
// kernel writes there (a garbled or hostile file). The error names the
// file and the line.
var ErrMalformedFile = errors.New("cgroup: malformed cgroup file")

// maxFileBytes bounds a cgroup file Usage reads: cpu.stat is well under
// 1 KiB (a dozen counters), memory.current and memory.peak one number.
const maxFileBytes = 64 << 10

// maxProcsBytes bounds one cgroup.procs file PIDs reads: about 500,000
// processes.
const maxProcsBytes = 4 << 20

// parsePIDs appends the PIDs of a cgroup.procs file to pids: one decimal
// number a line. The kernel writes 0 for a process outside the reader's
// PID namespace (an agent in a container reading a cgroup that also
// holds host processes); such a process has no PID the reader could
// name, so 0 is skipped rather than refused.
func parsePIDs(pids []int, b []byte) ([]int, error) {
	for n, line := range numberedLines(b) {
		v, err := parseCounter(line)
		if err != nil || v > math.MaxInt32 {
			return pids, fmt.Errorf("%w: cgroup.procs line %d: %q is not a process id", ErrMalformedFile, n, sysfs.Clip(line))
		}
		if v == 0 {
			continue // not in the reader's PID namespace
		}
		pids = append(pids, int(v))
	}
	return pids, nil
}

// Usage is what a job's or step's cgroup has used, as the kernel counts
// it: cumulative since the cgroup was created, over every process that
// ran in it and its descendants (a job's usage includes its steps').
// Counters are reported as the kernel gives them: a caller wanting rates
// takes differences between two readings. A reading the kernel does not
// give is -1 (unknown).
type Usage struct {
	// CPUMicros is the CPU time used, in microseconds (cpu.stat
	// usage_usec): UserMicros + SystemMicros, up to the kernel's rounding.
	CPUMicros int64
	// UserMicros is the CPU time used in user mode (cpu.stat user_usec).
	UserMicros int64
	// SystemMicros is the CPU time used in the kernel (cpu.stat
	// system_usec).
	SystemMicros int64
	// MemoryBytes is the memory in use now (memory.current: anonymous
	// memory, page cache and kernel memory charged to the cgroup); -1
	// when the memory controller is not enabled for the cgroup.
	MemoryBytes int64
	// MemoryPeakBytes is the most memory in use at once since the cgroup
	// was created (memory.peak, Linux 5.19 and later); -1 on older
	// kernels or without the memory controller.
	MemoryPeakBytes int64
}

// unknownUsage is a Usage with every reading unknown.
var unknownUsage = Usage{CPUMicros: -1, UserMicros: -1, SystemMicros: -1, MemoryBytes: -1, MemoryPeakBytes: -1}

// parseCPUStat reads cpu.stat's usage_usec, user_usec and system_usec
// into u. Every line must be "key value" with a lower-case key and a
// decimal value, one space apart; keys it does not need (nr_periods,
// throttled_usec, … and any a later kernel adds) are skipped, a counter
// it reads given twice is an error. A counter absent from the file stays
// -1.
func parseCPUStat(b []byte, u *Usage) error {
	var seen [3]bool
	for n, line := range numberedLines(b) {
		key, val, ok := strings.Cut(line, " ")
		if !ok || !validKey(key) {
			return fmt.Errorf("%w: cpu.stat line %d: %q: want \"key value\"", ErrMalformedFile, n, sysfs.Clip(line))
		}
		v, err := parseCounter(val)
		if err != nil {
			return fmt.Errorf("%w: cpu.stat line %d: %s: %w", ErrMalformedFile, n, key, err)
		}
		var k int
		var to *int64
		switch key {
		case "usage_usec":
			k, to = 0, &u.CPUMicros
		case "user_usec":
			k, to = 1, &u.UserMicros
		case "system_usec":
			k, to = 2, &u.SystemMicros
		default:
			continue
		}
		if seen[k] {
			return fmt.Errorf("%w: cpu.stat line %d: %s given twice", ErrMalformedFile, n, key)
		}
		seen[k] = true
		*to = v
	}
	return nil
}

// parseSingle reads a file holding one counter on one line
// (memory.current, memory.peak).
func parseSingle(file string, b []byte) (int64, error) {
	var only string
	count := 0
	for _, l := range numberedLines(b) {
		only = l
		count++
	}
	if count != 1 {
		return 0, fmt.Errorf("%w: %s: %d lines, want one number", ErrMalformedFile, file, count)
	}
	v, err := parseCounter(only)
	if err != nil {
		return 0, fmt.Errorf("%w: %s line 1: %w", ErrMalformedFile, file, err)
	}
	return v, nil
}

// numberedLines yields a kernel file's lines, numbered from 1, without
// their newlines; an empty file has none, and a final newline ends the
// last line rather than starting another.
func numberedLines(b []byte) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		s := strings.TrimSuffix(string(b), "\n")
		if s == "" {
			return
		}
		n := 1
		for line := range strings.SplitSeq(s, "\n") {
			if !yield(n, line) {
				return
			}
			n++
		}
	}
}

// parseCounter parses a non-negative decimal counter that fits an int64.
func parseCounter(s string) (int64, error) {
	if s == "" || len(s) > 20 {
		return 0, fmt.Errorf("%q is not a counter", sysfs.Clip(s))
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not a counter", sysfs.Clip(s))
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v > math.MaxInt64 {
		return 0, fmt.Errorf("%s overflows", s)
	}
	return int64(v), nil
}

// validKey reports whether k looks like a cpu.stat key: 1-64 characters
// from [a-z0-9_.] ("core_sched.force_idle_usec" has a dot).
func validKey(k string) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
