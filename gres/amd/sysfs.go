package amd

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/gres"
)

// This file reads single sysfs attributes below the driver's root.

// readLine returns the trimmed first line of a small file.
func readLine(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, err := bufio.NewReader(io.LimitReader(f, maxFileBytes)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

// readUint reads a file holding one unsigned decimal number.
func readUint(path string) (uint64, error) {
	s, err := readLine(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %q: want an unsigned integer", ErrMalformed, path, clip(s))
	}
	return n, nil
}

// readNUMA reads a numa_node file: a node id, or -1 (also for an
// unreadable or malformed file, or one beyond gres.MaxNUMANode).
func readNUMA(path string) int {
	s, err := readLine(path)
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > gres.MaxNUMANode {
		return -1
	}
	return n
}

// readHexID reads a PCI id file ("0x1002").
func readHexID(path string) (uint16, error) {
	s, err := readLine(path)
	if err != nil {
		return 0, err
	}
	h, ok := strings.CutPrefix(s, "0x")
	n, perr := strconv.ParseUint(h, 16, 16)
	if !ok || perr != nil {
		return 0, fmt.Errorf("%w: %s: %q: want a 16-bit hex id like 0x1002", ErrMalformed, path, clip(s))
	}
	return uint16(n), nil
}

// readDevNumber reads a "major:minor" dev file.
func readDevNumber(path string) (major, minor int64, err error) {
	s, err := readLine(path)
	if err != nil {
		return 0, 0, err
	}
	a, b, ok := strings.Cut(s, ":")
	ma, err1 := strconv.ParseInt(a, 10, 64)
	mi, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || ma < 0 || mi < 0 || ma > gres.MaxDeviceNumber || mi > gres.MaxDeviceNumber {
		return 0, 0, fmt.Errorf("%w: %s: %q: want major:minor", ErrMalformed, path, clip(s))
	}
	return ma, mi, nil
}

// readCPUList reads a Linux CPU list file; false when it is unreadable,
// malformed or empty.
func readCPUList(path string) (gres.CoreSet, bool) {
	s, err := readLine(path)
	if err != nil {
		return gres.CoreSet{}, false
	}
	c, err := gres.ParseCoreSet(s)
	return c, err == nil && !c.IsEmpty()
}

// readProps parses a KFD properties file.
func readProps(path string) (Properties, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := ParseProperties(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// numberedDirs returns the entries of dir whose names are decimal
// numbers (KFD nodes, io_links, mem_banks), in increasing order, and the
// names of other entries.
func numberedDirs(dir string) (ids []int, others []string, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n < 0 || strconv.Itoa(n) != e.Name() {
			others = append(others, e.Name())
			continue
		}
		ids = append(ids, n)
	}
	slices.Sort(ids)
	return ids, others, nil
}

// cpuSocket reads the socket (physical_package_id) of a CPU; -1 when
// unknown.
func (d *Driver) cpuSocket(cpu int) int {
	return readNUMA(filepath.Join(d.root, "sys/devices/system/cpu", "cpu"+strconv.Itoa(cpu), "topology/physical_package_id"))
}
