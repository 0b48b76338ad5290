package gres

import (
	"fmt"
	"strconv"
	"strings"
)

// Sharing GRES: Slurm's gres/shard and gres/mps let several jobs use one
// GPU at once. A device offers a number of shards (gres.conf Name=shard
// Count=N File=/dev/nvidiaX) and of MPS shares (Name=mps, typically 100
// per GPU so that a count reads as a percentage); a job asks for shard:2
// or mps:50 and gets them on concrete devices. As in Slurm a device is
// used either whole (gres/gpu) or shared (gres/shard, gres/mps), never
// both at once: a device with shares in use is not chosen whole, and a
// device allocated whole gives no shares.
const (
	// ShardName is the GRES name of GPU shards (Slurm's gres/shard).
	ShardName = "shard"
	// MPSName is the GRES name of CUDA MPS shares (Slurm's gres/mps).
	MPSName = "mps"
)

// MaxShares is the most shards (or MPS shares) one device may offer.
const MaxShares = 1<<20 - 1

// IsSharing reports whether name is a sharing GRES: shard or mps
// (case-insensitive).
func IsSharing(name string) bool {
	return strings.EqualFold(name, ShardName) || strings.EqualFold(name, MPSName)
}

// DeviceShares is how one device is shared between jobs.
type DeviceShares struct {
	// Device is the shared device's Index.
	Device int
	// Shards is how many gres/shard the device is split into (gres.conf
	// Name=shard Count=); 0: it is not sharded.
	Shards int `json:",omitempty"`
	// MPS is the device's gres/mps count (gres.conf Name=mps Count=,
	// typically 100); 0: no MPS.
	MPS int `json:",omitempty"`
}

// count returns the device's shares of the sharing GRES name.
func (d DeviceShares) count(name string) int {
	if strings.EqualFold(name, MPSName) {
		return d.MPS
	}
	return d.Shards
}

// MIGInstance describes a device that is a MIG (Multi-Instance GPU)
// instance: a compute instance inside a GPU instance of a parent GPU in
// MIG mode. Its Device entry carries the GRES type ("h100_1g.10gb").
type MIGInstance struct {
	// Device is the instance's device Index.
	Device int
	// Parent is the NVML index of the parent GPU; ParentUUID its UUID.
	Parent     int
	ParentUUID string `json:",omitempty"`
	// Profile is the instance's profile as nvidia-smi names it
	// ("1g.10gb", "3g.40gb", "1c.2g.20gb").
	Profile string
	// GPUInstance and ComputeInstance are the NVML instance ids.
	GPUInstance, ComputeInstance int
}

// NVLinkFabric is the multi-node NVLink domain of a node's GPUs as NVML
// reports it (nvmlDeviceGetGpuFabricInfoV): GPUs with the same cluster
// UUID and clique ID share one NVLink fabric across nodes (a GB200
// NVL72-style rack). The zero value means no multi-node fabric.
type NVLinkFabric struct {
	// ClusterUUID is the fabric cluster's UUID, in the usual 8-4-4-4-12
	// hexadecimal form.
	ClusterUUID string `json:",omitempty"`
	// CliqueID is the clique (NVLink partition) inside the cluster.
	CliqueID uint32 `json:",omitempty"`
}

// IsZero reports whether f names no fabric.
func (f NVLinkFabric) IsZero() bool { return f == NVLinkFabric{} }

// String returns "<cluster UUID>/<clique ID>", the domain's key; "" when
// zero.
func (f NVLinkFabric) String() string {
	if f.IsZero() {
		return ""
	}
	return f.ClusterUUID + "/" + strconv.FormatUint(uint64(f.CliqueID), 10)
}

// validateSharing checks Shares, MIG and Fabric against the devices.
func (inv *Inventory) validateSharing() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidInventory}, args...)...)
	}
	has := func(idx int) bool {
		for k := range inv.Devices {
			if inv.Devices[k].Index == idx {
				return true
			}
		}
		return false
	}
	for i, s := range inv.Shares {
		switch {
		case !has(s.Device):
			return bad("shares of device %d: no such device", s.Device)
		case i > 0 && s.Device <= inv.Shares[i-1].Device:
			return bad("shares of device %d: after device %d; shares must be in increasing device order, once each", s.Device, inv.Shares[i-1].Device)
		case s.Shards < 0 || s.Shards > MaxShares:
			return bad("shares of device %d: %d shards outside [0, %d]", s.Device, s.Shards, MaxShares)
		case s.MPS < 0 || s.MPS > MaxShares:
			return bad("shares of device %d: MPS count %d outside [0, %d]", s.Device, s.MPS, MaxShares)
		case s.Shards == 0 && s.MPS == 0:
			return bad("shares of device %d: neither shards nor MPS", s.Device)
		}
	}
	for i, m := range inv.MIG {
		switch {
		case !has(m.Device):
			return bad("MIG instance %d: no such device", m.Device)
		case i > 0 && m.Device <= inv.MIG[i-1].Device:
			return bad("MIG instance %d: after %d; MIG instances must be in increasing device order, once each", m.Device, inv.MIG[i-1].Device)
		case m.Parent < 0 || m.Parent > MaxDeviceIndex:
			return bad("MIG instance %d: parent GPU %d outside [0, %d]", m.Device, m.Parent, MaxDeviceIndex)
		case m.GPUInstance < 0 || m.ComputeInstance < 0:
			return bad("MIG instance %d: negative instance ids %d/%d", m.Device, m.GPUInstance, m.ComputeInstance)
		case m.Profile == "" || !validIdent(m.Profile):
			return bad("MIG instance %d: profile %q: want 1-64 letters, digits, '_', '-' or '.'", m.Device, m.Profile)
		}
	}
	if f := inv.Fabric; !f.IsZero() && (f.ClusterUUID == "" || len(f.ClusterUUID) > 64 || strings.ContainsAny(f.ClusterUUID, "/, \t\n")) {
		return bad("NVLink fabric cluster UUID %q: want 1-64 characters without '/', ',' or spaces", f.ClusterUUID)
	}
	return nil
}

// ParseSharesConf reads one gres.conf line that shares devices, Slurm's
//
//	Name=shard Count=32 File=/dev/nvidia[0-3]
//	Name=mps Count=200 File=/dev/nvidia0,/dev/nvidia1
//
// into one DeviceShares per file: the device index is the number ending
// the file name (/dev/nvidiaN), and Count is spread evenly over the files
// (as Slurm does), so it must be a multiple of their number. Keys are
// case-insensitive; NodeName= and Type= are accepted and ignored. Errors
// wrap ErrInvalidGRES and name what was wrong.
func ParseSharesConf(line string) ([]DeviceShares, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: gres.conf %q: "+format, append([]any{ErrInvalidGRES, line}, args...)...)
	}
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	var name, count, file string
	for _, kv := range strings.Fields(line) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
			return nil, bad("%q: want Key=Value", kv)
		}
		switch strings.ToLower(k) {
		case "name":
			name = v
		case "count":
			count = v
		case "file":
			file = v
		case "nodename", "type":
		default:
			return nil, bad("unknown key %q (want Name, Count, File)", k)
		}
	}
	if !IsSharing(name) {
		return nil, bad("Name=%q: want shard or mps", name)
	}
	if file == "" {
		return nil, bad("no File=: shares belong to devices")
	}
	files, err := expandFiles(file)
	if err != nil {
		return nil, bad("File=%s: %w", file, err)
	}
	n, err := strconv.ParseInt(count, 10, 64)
	if err != nil || n <= 0 {
		return nil, bad("Count=%q: want a positive count", count)
	}
	if n%int64(len(files)) != 0 || n/int64(len(files)) > MaxShares {
		return nil, bad("Count=%d over %d files: want a multiple of the file count, at most %d per device", n, len(files), MaxShares)
	}
	per := int(n / int64(len(files)))
	out := make([]DeviceShares, 0, len(files))
	for _, f := range files {
		end := len(f)
		for end > 0 && f[end-1] >= '0' && f[end-1] <= '9' {
			end--
		}
		idx, err := strconv.Atoi(f[end:])
		if end == len(f) || err != nil || idx > MaxDeviceIndex {
			return nil, bad("file %q: want a device file ending in its index (/dev/nvidiaN)", f)
		}
		for _, o := range out {
			if o.Device == idx {
				return nil, bad("device %d listed twice", idx)
			}
		}
		d := DeviceShares{Device: idx}
		if strings.EqualFold(name, MPSName) {
			d.MPS = per
		} else {
			d.Shards = per
		}
		out = append(out, d)
	}
	return out, nil
}

// maxFiles bounds the files one File= expression may name.
const maxFiles = MaxDevices

// expandFiles expands a comma-separated list of file names, each with at
// most one numeric range in brackets ("/dev/nvidia[0-3,5]").
func expandFiles(s string) ([]string, error) {
	var out []string
	for len(s) > 0 {
		// Split at the first comma outside brackets.
		depth, cut := 0, len(s)
		for i := 0; i < len(s); i++ {
			switch s[i] {
			case '[':
				depth++
			case ']':
				depth--
			case ',':
				if depth == 0 && cut == len(s) {
					cut = i
				}
			}
			if cut != len(s) {
				break
			}
		}
		item := s[:cut]
		s = strings.TrimPrefix(s[cut:], ",")
		open := strings.IndexByte(item, '[')
		if open < 0 {
			if item == "" || strings.ContainsRune(item, ']') {
				return nil, fmt.Errorf("bad file name %q", item)
			}
			out = append(out, item)
		} else {
			end := strings.IndexByte(item, ']')
			if end < open || end != len(item)-1 {
				return nil, fmt.Errorf("bad range in %q: want prefix[a-b,c]", item)
			}
			prefix := item[:open]
			for _, r := range strings.Split(item[open+1:end], ",") {
				lo, hi, isRange := strings.Cut(r, "-")
				a, err1 := strconv.Atoi(lo)
				b := a
				var err2 error
				if isRange {
					b, err2 = strconv.Atoi(hi)
				}
				if err1 != nil || err2 != nil || a < 0 || b < a || b > MaxDeviceIndex {
					return nil, fmt.Errorf("bad range %q in %q", r, item)
				}
				if len(out)+b-a+1 > maxFiles {
					return nil, fmt.Errorf("more than %d files", maxFiles)
				}
				for k := a; k <= b; k++ {
					out = append(out, prefix+strconv.Itoa(k))
				}
			}
		}
		if len(out) > maxFiles {
			return nil, fmt.Errorf("more than %d files", maxFiles)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no files")
	}
	return out, nil
}
