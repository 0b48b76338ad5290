package sysfs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/gres"
)

// ErrMalformed reports a sysfs file in an unexpected format.
var ErrMalformed = errors.New("malformed sysfs file")

// MaxFileBytes bounds what is read of one file: sysfs attributes are at
// most one page.
const MaxFileBytes = 64 << 10

// Line returns the first line of the file at path, trimmed of spaces.
func Line(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, err := bufio.NewReader(io.LimitReader(f, MaxFileBytes)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

// Clip shortens s for an error message.
func Clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// read parses the first line of the file at path with parse; content
// parse rejects is an error wrapping ErrMalformed saying it should have
// been want.
func read[T any](path, want string, parse func(string) (T, bool)) (T, error) {
	var zero T
	s, err := Line(path)
	if err != nil {
		return zero, err
	}
	v, ok := parse(s)
	if !ok {
		return zero, fmt.Errorf("%w: %s: %q: want %s", ErrMalformed, path, Clip(s), want)
	}
	return v, nil
}

// Uint reads a file holding one unsigned decimal number.
func Uint(path string) (uint64, error) {
	return read(path, "an unsigned integer", func(s string) (uint64, bool) {
		n, err := strconv.ParseUint(s, 10, 64)
		return n, err == nil
	})
}

// Int reads a file holding one decimal integer (energy1_input,
// rc6_residency_ms …).
func Int(path string) (int64, error) {
	return read(path, "a decimal integer", func(s string) (int64, bool) {
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	})
}

// Size reads a byte count written in decimal or, like the xe driver's
// physical_vram_size_bytes, in hexadecimal with a 0x prefix.
func Size(path string) (int64, error) {
	return read(path, "a byte count", func(s string) (int64, bool) {
		n, err := strconv.ParseInt(s, 0, 64)
		return n, err == nil && n >= 0
	})
}

// HexID reads a 16-bit PCI id file ("0x1002"; the kernel prints the 0x
// prefix).
func HexID(path string) (uint16, error) {
	return read(path, "a 16-bit hexadecimal id such as 0x1002", func(s string) (uint16, bool) {
		h, ok := strings.CutPrefix(strings.ToLower(s), "0x")
		n, err := strconv.ParseUint(h, 16, 16)
		return uint16(n), ok && err == nil
	})
}

// DevNumber reads the dev attribute of a class device: its device number
// "major:minor", each in [0, gres.MaxDeviceNumber].
func DevNumber(path string) (major, minor int64, err error) {
	n, err := read(path, "major:minor", func(s string) ([2]int64, bool) {
		a, b, ok := strings.Cut(s, ":")
		ma, err1 := strconv.ParseInt(a, 10, 64)
		mi, err2 := strconv.ParseInt(b, 10, 64)
		return [2]int64{ma, mi}, ok && err1 == nil && err2 == nil && ma >= 0 && mi >= 0 && ma <= gres.MaxDeviceNumber && mi <= gres.MaxDeviceNumber
	})
	return n[0], n[1], err
}

// ID reads a file holding a non-negative id (a socket's
// physical_package_id); -1 when it is unreadable, malformed or negative.
func ID(path string) int {
	s, err := Line(path)
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// NUMANode reads a numa_node file: the node id, or -1 when the file says
// -1 (no node), is unreadable or malformed, or names a node beyond
// gres.MaxNUMANode.
func NUMANode(path string) int {
	if n := ID(path); n <= gres.MaxNUMANode {
		return n
	}
	return -1
}

// CPUSocket returns the socket (physical_package_id) of CPU cpu from the
// sysfs tree at sys (the directory the host mounts as /sys); -1 when
// unknown.
func CPUSocket(sys string, cpu int) int {
	return ID(filepath.Join(sys, "devices/system/cpu", "cpu"+strconv.Itoa(cpu), "topology/physical_package_id"))
}

// CPUList reads a Linux CPU list file (local_cpulist, cpulist: "0-63",
// "0-51,104-155"). A list gres.ParseCoreSet rejects is an error wrapping
// ErrMalformed; an empty list is not an error.
func CPUList(path string) (gres.CoreSet, error) {
	s, err := Line(path)
	if err != nil {
		return gres.CoreSet{}, err
	}
	c, err := gres.ParseCoreSet(s)
	if err != nil {
		return gres.CoreSet{}, fmt.Errorf("%w: %s: %w", ErrMalformed, path, err)
	}
	return c, nil
}

// CPUs reads a CPU list file for a set of CPUs; false when the file is
// unreadable or malformed or the list is empty.
func CPUs(path string) (gres.CoreSet, bool) {
	c, err := CPUList(path)
	return c, err == nil && !c.IsEmpty()
}

// Numbered lists the entries of dir named prefix<N>, N a decimal number
// written without leading zeros, sorted by N ("card" lists card0,
// card1 …; "" lists 0, 1 …). A missing or unreadable directory lists
// nothing.
func Numbered(dir, prefix string) []int {
	ids, _, _ := ReadNumbered(dir, prefix)
	return ids
}

// ReadNumbered is Numbered that also returns the names of dir's other
// entries, in directory order, and the error of reading dir.
func ReadNumbered(dir, prefix string) (ids []int, others []string, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range ents {
		if n, ok := number(e.Name(), prefix); ok {
			ids = append(ids, n)
		} else {
			others = append(others, e.Name())
		}
	}
	slices.Sort(ids)
	return ids, others, nil
}

// number returns N of name prefix<N>.
func number(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || rest == "" || strings.TrimLeft(rest, "0123456789") != "" || len(rest) > 1 && rest[0] == '0' {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}

// Exists reports whether path exists (following links).
func Exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// LinkBase returns the last element of a symbolic link's target (the PCI
// address a device link points to, the driver a driver link names).
func LinkBase(path string) (string, error) {
	t, err := os.Readlink(path)
	if err != nil {
		return "", err
	}
	return filepath.Base(t), nil
}

// Uevent reads a uevent file's KEY=value lines; nil when it is
// unreadable.
func Uevent(path string) map[string]string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(io.LimitReader(f, MaxFileBytes))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			out[k] = v
		}
	}
	return out
}

var pciAddrRE = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// ValidPCI reports whether s is a PCI address as sysfs names PCI
// devices ("0000:29:00.0", lower case).
func ValidPCI(s string) bool { return pciAddrRE.MatchString(s) }
