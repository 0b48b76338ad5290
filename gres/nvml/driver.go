//go:build cgo

package nvml

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/internal/driverkit"
)

// DefaultIgnoredXIDs returns the XIDs that do not make a GPU unhealthy by
// default: errors caused by the application, not the hardware (13 graphics
// engine exception, 31 GPU memory page fault, 43 GPU stopped processing,
// 45 preemptive cleanup, 68 video processor exception, 109 context switch
// timeout) — the list NVIDIA's Kubernetes device plugin uses. A fresh
// slice on every call.
func DefaultIgnoredXIDs() []uint64 { return []uint64{13, 31, 43, 45, 68, 109} }

// Options configures a Driver. The zero value is ready to use.
type Options struct {
	// LibraryPath is the NVML library Open loads; "" loads
	// libnvidia-ml.so.1 through the dynamic loader's search path.
	LibraryPath string
	// SysfsRoot, ProcRoot and DevRoot replace "/sys", "/proc" and "/dev"
	// (for tests and containers with the host's trees mounted elsewhere).
	// sysfs gives NUMA nodes, local CPUs and sockets when NVML does not;
	// procfs gives the majors of nvidia-uvm and nvidia-caps and MIG
	// capability minors; DevRoot prefixes the device file paths reported.
	SysfsRoot, ProcRoot, DevRoot string
	// Name is the GRES name of the devices; "" means "gpu".
	Name string
	// TypeOf maps an NVML product name ("NVIDIA H100 80GB HBM3") to a GRES
	// type; nil means NormalizeType ("h100"). It must return "" (untyped)
	// or a valid type: 1-64 characters from [A-Za-z0-9_.-].
	TypeOf func(name string) string
	// IgnoredXIDs are XIDs that do not make a device unhealthy. nil means
	// DefaultIgnoredXIDs(); an empty non-nil slice ignores none.
	IgnoredXIDs []uint64
	// MaxCPUs bounds the CPU ids read from NVML's CPU affinity; 0 means
	// 4096. At most gres.MaxCoreID+1.
	MaxCPUs int
	// WaitSlice is the longest single NVML event wait inside PollHealth,
	// which checks its context between slices (an NVML wait cannot be
	// interrupted); 0 means one second. Between 1ms and 1h.
	WaitSlice time.Duration
}

// Validate checks the options. Errors wrap ErrInvalidOptions.
func (o *Options) Validate() error {
	switch {
	case o.Name != "" && !validIdent(o.Name):
		return fmt.Errorf("%w: Name %q: want 1-64 characters from [A-Za-z0-9_.-] starting with a letter", ErrInvalidOptions, o.Name)
	case o.MaxCPUs < 0 || o.MaxCPUs > gres.MaxCoreID+1:
		return fmt.Errorf("%w: MaxCPUs %d outside [0, %d]", ErrInvalidOptions, o.MaxCPUs, gres.MaxCoreID+1)
	case o.WaitSlice < 0 || o.WaitSlice > 0 && o.WaitSlice < time.Millisecond || o.WaitSlice > time.Hour:
		return fmt.Errorf("%w: WaitSlice %v: want 0 or between 1ms and 1h", ErrInvalidOptions, o.WaitSlice)
	}
	return nil
}

// validIdent reports whether s is a valid GRES name (see
// gres.Request.Validate): a valid type starting with a letter.
func validIdent(s string) bool { return gres.Request{Name: s}.Validate() == nil }

// Driver discovers a node's NVIDIA GPUs and watches their health through
// NVML. It implements gres.Discoverer, gres.HealthWatcher,
// gres.TelemetrySampler (telemetry.go) and gres.ProcessSampler
// (processes.go).
//
// A Driver makes no NVML call before Init succeeds and none after
// Shutdown: every method then returns ErrNotInitialized. This matters
// because any NVML call after a failed nvmlInit ends the process (an
// unresolved-symbol error no recover catches). Functions that older
// drivers lack are looked up before they are called, for the same reason.
//
// Discover and PollHealth may run concurrently (one watch goroutine, one
// control loop); Shutdown waits for calls in progress. A nil *Driver
// answers ErrNotInitialized.
type Driver struct {
	lib     gonvml.Interface
	opts    Options
	host    host
	name    string
	typeOf  func(string) string
	ignored map[uint64]bool
	maxCPUs int
	slice   time.Duration

	mu      sync.RWMutex // lifecycle: write-held by Init/Shutdown, read-held by every other call
	ready   bool
	has     map[string]bool // optional NVML symbols present in the loaded library
	version string

	snap driverkit.Last[snapshot] // last discovery

	pollMu sync.Mutex
	watch  *watchState

	telMu    sync.Mutex        // serialises Sample and SampleWindows
	utilSeen map[string]uint64 // GPU UUID → newest utilisation sample averaged (NVML µs timestamp)
}

// optionalSymbols are NVML entry points newer than the oldest supported
// driver; they are called only when the library exports them.
var optionalSymbols = []string{
	"nvmlDeviceGetNumaNodeId",
	"nvmlDeviceGetNvLinkRemoteDeviceType",
	"nvmlDeviceGetRemappedRows",
	"nvmlDeviceGetMigMode",
	"nvmlDeviceGetP2PStatus",
	"nvmlDeviceGetGpuFabricInfo",
}

// New returns a Driver over lib (the real library from gonvml.New, or a
// mock such as nvmltest's). It makes no NVML call; call Init next. It
// fails on a nil lib or invalid options.
func New(lib gonvml.Interface, opts Options) (*Driver, error) {
	if lib == nil {
		return nil, fmt.Errorf("%w: nil NVML interface", ErrInvalidOptions)
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	d := &Driver{lib: lib, opts: opts, name: opts.Name, typeOf: opts.TypeOf, maxCPUs: opts.MaxCPUs, slice: opts.WaitSlice}
	d.host = host{sysfs: cmp.Or(opts.SysfsRoot, "/sys"), procfs: cmp.Or(opts.ProcRoot, "/proc")}
	if d.name == "" {
		d.name = "gpu"
	}
	if d.typeOf == nil {
		d.typeOf = NormalizeType
	}
	if d.maxCPUs == 0 {
		d.maxCPUs = 4096
	}
	if d.slice == 0 {
		d.slice = time.Second
	}
	ign := opts.IgnoredXIDs
	if ign == nil {
		ign = DefaultIgnoredXIDs()
	}
	d.ignored = make(map[uint64]bool, len(ign))
	for _, x := range ign {
		d.ignored[x] = true
	}
	return d, nil
}

// Open loads the system's NVML library (opts.LibraryPath, or
// libnvidia-ml.so.1) and initialises it. Without the library it returns
// an error wrapping ErrLibraryNotFound (and ErrUnavailable) and a nil
// Driver.
func Open(opts Options) (*Driver, error) {
	var lib gonvml.Interface
	if opts.LibraryPath != "" {
		lib = gonvml.New(gonvml.WithLibraryPath(opts.LibraryPath))
	} else {
		lib = gonvml.New()
	}
	d, err := New(lib, opts)
	if err != nil {
		return nil, err
	}
	if err := d.Init(); err != nil {
		return nil, err
	}
	return d, nil
}

// Init initialises NVML. Without the library it fails with an error
// wrapping ErrLibraryNotFound; other failures (driver not loaded, no
// permission …) wrap ErrUnavailable and the NVML return code. After a
// failure every other method returns ErrNotInitialized without touching
// NVML; Init may be retried. Init on an initialised Driver does nothing.
func (d *Driver) Init() error {
	if d == nil {
		return ErrNotInitialized
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ready {
		return nil
	}
	switch ret := d.lib.Init(); ret {
	case gonvml.SUCCESS:
	case gonvml.ERROR_LIBRARY_NOT_FOUND:
		return fmt.Errorf("%w (%w)", ErrLibraryNotFound, ret)
	default:
		return fmt.Errorf("%w: Init: %w", ErrUnavailable, ret)
	}
	d.ready = true
	d.has = make(map[string]bool, len(optionalSymbols))
	ext := d.lib.Extensions()
	for _, s := range optionalSymbols {
		d.has[s] = ext != nil && ext.LookupSymbol(s) == nil
	}
	d.version = "nvml"
	if v, ret := d.lib.SystemGetDriverVersion(); ret == gonvml.SUCCESS {
		d.version += " driver " + v
	}
	if v, ret := d.lib.SystemGetCudaDriverVersion(); ret == gonvml.SUCCESS && v > 0 {
		d.version += fmt.Sprintf(" CUDA %d.%d", v/1000, v%1000/10)
	}
	return nil
}

// Shutdown releases the event set and shuts NVML down. Later calls (other
// than Init) return ErrNotInitialized. It waits for calls in progress; a
// PollHealth in progress returns within one WaitSlice.
func (d *Driver) Shutdown() error {
	if d == nil {
		return ErrNotInitialized
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.ready {
		return ErrNotInitialized
	}
	d.pollMu.Lock()
	if d.watch != nil && d.watch.set != nil {
		d.watch.set.Free()
	}
	d.watch = nil
	d.pollMu.Unlock()
	d.snap.Set(nil)
	d.telMu.Lock()
	d.utilSeen = nil
	d.telMu.Unlock()
	d.ready = false
	if ret := d.lib.Shutdown(); ret != gonvml.SUCCESS {
		return fmt.Errorf("nvml: Shutdown: %w", ret)
	}
	return nil
}

// begin read-locks the lifecycle and checks that Init succeeded. On
// success the caller must call d.mu.RUnlock.
func (d *Driver) begin(ctx context.Context) error {
	if d == nil {
		return ErrNotInitialized
	}
	d.mu.RLock()
	if !d.ready {
		d.mu.RUnlock()
		return ErrNotInitialized
	}
	if err := ctx.Err(); err != nil {
		d.mu.RUnlock()
		return err
	}
	return nil
}

var (
	_ gres.Discoverer    = (*Driver)(nil)
	_ gres.HealthWatcher = (*Driver)(nil)
)
