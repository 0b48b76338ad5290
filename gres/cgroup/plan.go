package cgroup

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	devconfig "github.com/opencontainers/cgroups/devices/config"

	"github.com/sluicehq/sluice/gres"
)

// Sentinel errors of this package (see also gres.ErrInvalidAllocation and
// gres.ErrJobNotApplied, which Apply and Release return).
var (
	// ErrInvalidConfig reports a bad Config.
	ErrInvalidConfig = errors.New("cgroup: invalid config")
	// ErrNotCgroup2 reports a Root outside a cgroup v2 (unified) mount.
	ErrNotCgroup2 = errors.New("cgroup: not a cgroup v2 hierarchy")
	// ErrControllerUnavailable reports a controller that cannot be enabled
	// for the job cgroups (not offered by the parent, or bound to a v1
	// hierarchy on a hybrid host).
	ErrControllerUnavailable = errors.New("cgroup: controller unavailable")
)

// DevicePolicy says which devices a confined job may open.
type DevicePolicy uint8

const (
	// DenyUnallocated (the default, like Slurm's ConstrainDevices): a job
	// may open every device except the Config.ManagedDevices (the GPUs and
	// other GRES device files of the node) that its allocation does not
	// list. InfiniBand, FUSE, /dev/null … stay usable without
	// configuration.
	DenyUnallocated DevicePolicy = iota
	// AllowListed: a job may open only Config.BaseDevices and the device
	// files of its allocation (nvidiactl and nvidia-uvm come with the
	// allocation when it is built with gres.Discovery.FilesFor).
	AllowListed
)

// String returns "deny-unallocated" or "allow-listed".
func (p DevicePolicy) String() string {
	switch p {
	case DenyUnallocated:
		return "deny-unallocated"
	case AllowListed:
		return "allow-listed"
	}
	return "DevicePolicy(" + strconv.Itoa(int(p)) + ")"
}

// DefaultControllers returns the controllers enabled for job cgroups by
// default: cpuset, cpu, memory and pids.
func DefaultControllers() []string { return []string{"cpuset", "cpu", "memory", "pids"} }

// DefaultBaseDevices returns the devices every job may open under
// AllowListed by default: /dev/null, zero, full, random, urandom, tty,
// ptmx and the pseudo-terminals /dev/pts/* (the set container runtimes
// allow).
func DefaultBaseDevices() []gres.DeviceFile {
	c := func(path string, major, minor int64) gres.DeviceFile {
		return gres.DeviceFile{Path: path, Kind: gres.CharDevice, Major: major, Minor: minor}
	}
	return []gres.DeviceFile{
		c("/dev/null", 1, 3), c("/dev/zero", 1, 5), c("/dev/full", 1, 7), c("/dev/random", 1, 8),
		c("/dev/urandom", 1, 9), c("/dev/tty", 5, 0), c("/dev/ptmx", 5, 2), c("/dev/pts", 136, gres.AnyMinor),
	}
}

// Config configures an Enforcer. Zero values mean the documented
// defaults; Root is required.
type Config struct {
	// Root is the cgroup v2 directory holding the job cgroups, e.g.
	// "/sys/fs/cgroup/sluice" (created when absent; it must hold no
	// processes). Job cgroups are Root/job_<id>, step cgroups
	// Root/job_<id>/step_<name>.
	Root string
	// Controllers are enabled for job and step cgroups; nil means
	// DefaultControllers(). Without "cpuset" the CPUs and Mems of an
	// allocation are not enforced, without "memory" its MemoryBytes (the
	// device program needs no controller).
	Controllers []string
	// Devices is the device policy; the zero value is DenyUnallocated.
	Devices DevicePolicy
	// ManagedDevices are the device files the scheduler hands out on this
	// node (typically gres.Discovery.DeviceFiles()). Under DenyUnallocated
	// a job may not open those its allocation does not list.
	ManagedDevices []gres.DeviceFile
	// BaseDevices are always allowed under AllowListed; nil means
	// DefaultBaseDevices().
	BaseDevices []gres.DeviceFile
	// AllowedSwapPercent is the swap a job or step with a memory limit
	// may use beyond it, in percent of its MemoryBytes: memory.swap.max
	// is MemoryBytes × AllowedSwapPercent / 100 (rounded down to a byte).
	// The default 0 allows no swap, so a job over its memory limit is
	// OOM-killed instead of swapping — Slurm's AllowedSwapSpace with
	// ConstrainSwapSpace=yes, whose default is also 0. A cgroup without
	// a memory limit (MemoryBytes 0) gets memory.swap.max "max".
	// Slurm's MemorySwappiness has no cgroup v2 interface file and no
	// counterpart here.
	AllowedSwapPercent float64
	// UnconstrainedSwap leaves memory.swap.max at "max": a job may swap
	// without limit beyond its memory limit. This is Slurm's default
	// (ConstrainSwapSpace=no); Sluice constrains swap by default because
	// an unlimited swap lets a job escape its memory limit. It cannot be
	// combined with AllowedSwapPercent.
	UnconstrainedSwap bool
}

// Validate checks the config: an absolute clean Root, known controller
// names without duplicates, a known policy and valid device files.
// Errors wrap ErrInvalidConfig.
func (c *Config) Validate() error {
	if c.Root == "" || !filepath.IsAbs(c.Root) || filepath.Clean(c.Root) != c.Root || c.Root == "/" {
		return fmt.Errorf("%w: Root %q: want an absolute clean path below a cgroup2 mount", ErrInvalidConfig, c.Root)
	}
	seen := map[string]bool{}
	for _, ctl := range c.Controllers {
		switch ctl {
		case "cpuset", "cpu", "memory", "pids", "io", "hugetlb", "rdma", "misc":
		default:
			return fmt.Errorf("%w: Controllers: unknown controller %q", ErrInvalidConfig, ctl)
		}
		if seen[ctl] {
			return fmt.Errorf("%w: Controllers: %q listed twice", ErrInvalidConfig, ctl)
		}
		seen[ctl] = true
	}
	if math.IsNaN(c.AllowedSwapPercent) || math.IsInf(c.AllowedSwapPercent, 0) || c.AllowedSwapPercent < 0 {
		return fmt.Errorf("%w: AllowedSwapPercent %v: want a finite percentage >= 0", ErrInvalidConfig, c.AllowedSwapPercent)
	}
	if c.UnconstrainedSwap && c.AllowedSwapPercent != 0 {
		return fmt.Errorf("%w: UnconstrainedSwap with AllowedSwapPercent %v: an unconstrained swap has no percentage", ErrInvalidConfig, c.AllowedSwapPercent)
	}
	if c.Devices > AllowListed {
		return fmt.Errorf("%w: Devices: unknown policy %d", ErrInvalidConfig, c.Devices)
	}
	for _, f := range c.ManagedDevices {
		if err := f.Validate(); err != nil {
			return fmt.Errorf("%w: ManagedDevices: %w", ErrInvalidConfig, err)
		}
		if f.Minor == gres.AnyMinor {
			return fmt.Errorf("%w: ManagedDevices: %v: a managed device needs a minor number", ErrInvalidConfig, f)
		}
	}
	for _, f := range c.BaseDevices {
		if err := f.Validate(); err != nil {
			return fmt.Errorf("%w: BaseDevices: %w", ErrInvalidConfig, err)
		}
	}
	return nil
}

func (c *Config) controllers() []string {
	if c.Controllers == nil {
		return DefaultControllers()
	}
	return c.Controllers
}

// DeviceRule is one rule of a cgroup device program, in cgroup v1 syntax:
// allow or deny access ("rwm") to a device kind and numbers. Kind 'a'
// matches every device.
type DeviceRule struct {
	Allow  bool
	Kind   byte  // 'a' (all), 'c' or 'b'
	Major  int64 // -1: any
	Minor  int64 // -1: any
	Access string
}

// String formats the rule as "allow c 195:3 rwm" or "deny a *:* rwm".
func (r DeviceRule) String() string {
	verb := "deny"
	if r.Allow {
		verb = "allow"
	}
	num := func(n int64) string {
		if n < 0 {
			return "*"
		}
		return strconv.FormatInt(n, 10)
	}
	return fmt.Sprintf("%s %c %s:%s %s", verb, r.Kind, num(r.Major), num(r.Minor), r.Access)
}

// rule converts to opencontainers' rule type.
func (r DeviceRule) rule() *devconfig.Rule {
	return &devconfig.Rule{Type: devconfig.Type(r.Kind), Major: r.Major, Minor: r.Minor,
		Permissions: devconfig.Permissions(r.Access), Allow: r.Allow}
}

// Plan is what Apply writes for one allocation: the cgroup directory, the
// interface files and the device program's rules.
type Plan struct {
	// Dir is the cgroup directory.
	Dir string
	// CpusetCpus and CpusetMems are written to cpuset.cpus and
	// cpuset.mems when not empty (empty: inherit from the parent).
	CpusetCpus, CpusetMems string
	// MemoryMax is written to memory.max: bytes, or "max".
	MemoryMax string
	// MemorySwapMax is written to memory.swap.max: the bytes of swap
	// allowed beyond MemoryMax (see Config.AllowedSwapPercent), or "max".
	MemorySwapMax string
	// Devices are the device program's rules in order: a default (the
	// first rule, for all devices), then the exceptions.
	Devices []DeviceRule
}

// JobDir returns the cgroup directory of a job, or of one of its steps
// (step != ""). It fails with gres.ErrInvalidAllocation on a name that is
// not gres.ValidName.
func (c *Config) JobDir(job, step string) (string, error) {
	if !gres.ValidName(job) {
		return "", fmt.Errorf("%w: job %q: want 1-64 characters from [A-Za-z0-9_.+-], not all dots", gres.ErrInvalidAllocation, job)
	}
	dir := filepath.Join(c.Root, "job_"+job)
	if step == "" {
		return dir, nil
	}
	if !gres.ValidName(step) {
		return "", fmt.Errorf("%w: job %q step %q: want 1-64 characters from [A-Za-z0-9_.+-], not all dots", gres.ErrInvalidAllocation, job, step)
	}
	return filepath.Join(dir, "step_"+step), nil
}

// Plan validates a and returns what Apply would write for it, without
// touching the filesystem. Device rules are sorted and free of
// duplicates, so equal allocations give equal plans.
func (c *Config) Plan(a gres.Allocation) (Plan, error) {
	if err := a.Validate(); err != nil {
		return Plan{}, err
	}
	dir, err := c.JobDir(a.Job, a.Step)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{Dir: dir, CpusetCpus: a.CPUs.String(), CpusetMems: a.MemsString(), MemoryMax: "max", MemorySwapMax: "max"}
	if a.MemoryBytes > 0 {
		p.MemoryMax = strconv.FormatInt(a.MemoryBytes, 10)
		if !c.UnconstrainedSwap {
			p.MemorySwapMax = swapBytes(a.MemoryBytes, c.AllowedSwapPercent)
		}
	}
	exception := func(allow bool, f gres.DeviceFile) DeviceRule {
		return DeviceRule{Allow: allow, Kind: byte(f.Kind), Major: f.Major, Minor: f.Minor, Access: "rwm"}
	}
	switch c.Devices {
	case DenyUnallocated:
		p.Devices = []DeviceRule{{Allow: true, Kind: 'a', Major: -1, Minor: -1, Access: "rwm"}}
		for _, f := range gres.SortDeviceFiles(slices.Clone(c.ManagedDevices)) {
			if !covered(a.Devices, f) {
				p.Devices = append(p.Devices, exception(false, f))
			}
		}
	case AllowListed:
		base := c.BaseDevices
		if base == nil {
			base = DefaultBaseDevices()
		}
		p.Devices = []DeviceRule{{Allow: false, Kind: 'a', Major: -1, Minor: -1, Access: "rwm"}}
		for _, f := range gres.SortDeviceFiles(append(slices.Clone(base), a.Devices...)) {
			p.Devices = append(p.Devices, exception(true, f))
		}
	}
	// The exceptions come from files sorted by (kind, major, minor, path),
	// so they are already in rule order; only files that differ by path
	// alone leave equal rules to drop.
	p.Devices = slices.Compact(p.Devices)
	return p, nil
}

// swapBytes formats mem × percent / 100 bytes, or "max" when that
// exceeds what the kernel can hold (an int64).
func swapBytes(mem int64, percent float64) string {
	b := math.Floor(float64(mem) * percent / 100)
	if b >= math.MaxInt64 {
		return "max"
	}
	return strconv.FormatInt(int64(b), 10)
}

// covered reports whether an allowed file grants access to f (same
// numbers, or the same major with AnyMinor).
func covered(allowed []gres.DeviceFile, f gres.DeviceFile) bool {
	for _, a := range allowed {
		if a.Kind == f.Kind && a.Major == f.Major && (a.Minor == f.Minor || a.Minor == gres.AnyMinor) {
			return true
		}
	}
	return false
}
