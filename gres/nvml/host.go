package nvml

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/gres/internal/sysfs"
)

// This file reads what NVML does not tell: sysfs (NUMA node, local CPUs,
// CPU sockets) and procfs (dynamic device majors, MIG capability minors).
// Every path is below a root the caller chooses, so tests use a temporary
// directory.

// errMalformed reports a sysfs or procfs file in an unexpected format.
var errMalformed = errors.New("malformed host file")

// NormalizeBusID converts an NVML PCI bus id ("00000000:1B:00.0", 8-digit
// domain, upper case) into the sysfs form ("0000:1b:00.0"). It returns ""
// for a string that is not a PCI address.
func NormalizeBusID(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	dom, rest, ok := strings.Cut(s, ":")
	if !ok {
		return ""
	}
	bus, rest, ok := strings.Cut(rest, ":")
	if !ok {
		return ""
	}
	dev, fn, ok := strings.Cut(rest, ".")
	if !ok || !isHex(dom, 1, 8) || !isHex(bus, 1, 2) || !isHex(dev, 1, 2) || !isHex(fn, 1, 1) {
		return ""
	}
	d, _ := strconv.ParseUint(dom, 16, 32)
	b, _ := strconv.ParseUint(bus, 16, 8)
	v, _ := strconv.ParseUint(dev, 16, 8)
	f, _ := strconv.ParseUint(fn, 16, 8)
	if d > 0xffff || v > 0x1f || f > 7 {
		return ""
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", d, b, v, f)
}

func isHex(s string, minLen, maxLen int) bool {
	if len(s) < minLen || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// cString converts a NUL-terminated C char array into a Go string.
func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// host reads sysfs and procfs below configurable roots.
type host struct {
	sysfs, procfs string
}

// pciNUMANode reads /sys/bus/pci/devices/<bus>/numa_node; -1 when unknown.
func (h host) pciNUMANode(bus string) int {
	if bus == "" {
		return -1
	}
	return sysfs.ID(filepath.Join(h.sysfs, "bus/pci/devices", bus, "numa_node"))
}

// pciLocalCPUs reads /sys/bus/pci/devices/<bus>/local_cpulist.
func (h host) pciLocalCPUs(bus string) (gres.CoreSet, bool) {
	if bus == "" {
		return gres.CoreSet{}, false
	}
	return sysfs.CPUs(filepath.Join(h.sysfs, "bus/pci/devices", bus, "local_cpulist"))
}

// nodeCPUs reads /sys/devices/system/node/node<N>/cpulist.
func (h host) nodeCPUs(node int) (gres.CoreSet, bool) {
	return sysfs.CPUs(filepath.Join(h.sysfs, "devices/system/node", "node"+strconv.Itoa(node), "cpulist"))
}

// cpuSocket reads /sys/devices/system/cpu/cpu<N>/topology/physical_package_id.
func (h host) cpuSocket(cpu int) int {
	return sysfs.ID(filepath.Join(h.sysfs, "devices/system/cpu", "cpu"+strconv.Itoa(cpu), "topology/physical_package_id"))
}

// socketOf returns the socket of the lowest CPU in cores, else of the
// lowest CPU of NUMA node numa; -1 when unknown.
func (h host) socketOf(cores gres.CoreSet, numa int) int {
	if ids := cores.AppendTo(nil); len(ids) > 0 {
		if s := h.cpuSocket(ids[0]); s >= 0 {
			return s
		}
	}
	if numa >= 0 {
		if c, ok := h.nodeCPUs(numa); ok {
			return h.cpuSocket(c.AppendTo(nil)[0])
		}
	}
	return -1
}

// charMajors reads the "Character devices:" section of /proc/devices.
func (h host) charMajors() (map[string]int64, error) {
	f, err := os.Open(filepath.Join(h.procfs, "devices"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseProcDevices(io.LimitReader(f, 1<<20))
}

// ParseProcDevices parses /proc/devices and returns the major number of
// every character device driver by name ("nvidia-uvm" → 510). Block
// devices are skipped. Malformed lines are an error wrapping the cause.
func ParseProcDevices(r io.Reader) (map[string]int64, error) {
	out := make(map[string]int64)
	sc := bufio.NewScanner(r)
	inChar := false
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		switch {
		case t == "":
			continue
		case strings.EqualFold(t, "Character devices:"):
			inChar = true
			continue
		case strings.EqualFold(t, "Block devices:"):
			inChar = false
			continue
		case !inChar:
			continue
		}
		num, name, ok := strings.Cut(t, " ")
		name = strings.TrimSpace(name)
		maj, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil || name == "" || maj < 0 || maj > gres.MaxDeviceNumber {
			return nil, fmt.Errorf("/proc/devices line %d %q: %w", line, t, errMalformed)
		}
		if _, dup := out[name]; !dup {
			out[name] = maj
		}
	}
	return out, sc.Err()
}

// ParseCapabilityMinor parses an NVIDIA capability "access" file
// (/proc/driver/nvidia/capabilities/…/access) and returns its
// DeviceFileMinor, the minor of /dev/nvidia-caps/nvidia-cap<minor>.
func ParseCapabilityMinor(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(io.LimitReader(r, 1<<16))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(k) != "DeviceFileMinor" {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 || n > gres.MaxDeviceNumber {
			return 0, fmt.Errorf("DeviceFileMinor %q: %w", strings.TrimSpace(v), errMalformed)
		}
		return n, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no DeviceFileMinor line: %w", errMalformed)
}

// capabilityMinor reads the access file of a MIG GPU instance (ci < 0) or
// compute instance below GPU minor gpuMinor.
func (h host) capabilityMinor(gpuMinor, gi, ci int) (int64, error) {
	p := filepath.Join(h.procfs, "driver/nvidia/capabilities", "gpu"+strconv.Itoa(gpuMinor), "mig", "gi"+strconv.Itoa(gi))
	if ci >= 0 {
		p = filepath.Join(p, "ci"+strconv.Itoa(ci))
	}
	f, err := os.Open(filepath.Join(p, "access"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, err := ParseCapabilityMinor(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p, err)
	}
	return n, nil
}
