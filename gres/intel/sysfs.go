package intel

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/gres"
)

// This file reads sysfs attribute files: one value per file, as the
// kernel's sysfs rules require, terminated by a newline.

// readLine returns the first line of a sysfs file, trimmed.
func readLine(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	return strings.TrimSpace(string(line)), nil
}

// readInt reads a decimal integer file (numa_node, energy1_input …).
func readInt(path string) (int64, error) {
	s, err := readLine(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q: want a decimal integer", path, s)
	}
	return v, nil
}

// readHexID reads a PCI id file ("0x8086").
// readSize reads a size file written in decimal or, like xe's
// physical_vram_size_bytes, in hexadecimal with a 0x prefix.
func readSize(path string) (int64, error) {
	s, err := readLine(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%s: %q: want a byte count", path, s)
	}
	return v, nil
}

func readHexID(path string) (uint16, error) {
	s, err := readLine(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(s), "0x"), 16, 16)
	if err != nil || !strings.HasPrefix(strings.ToLower(s), "0x") {
		return 0, fmt.Errorf("%s: %q: want a 16-bit hexadecimal id such as 0x8086", path, s)
	}
	return uint16(v), nil
}

// readDevNum reads a device number file ("226:128", the dev attribute of
// a class device).
func readDevNum(path string) (major, minor int64, err error) {
	s, err := readLine(path)
	if err != nil {
		return 0, 0, err
	}
	a, b, ok := strings.Cut(s, ":")
	major, err1 := strconv.ParseInt(a, 10, 64)
	minor, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || major < 0 || minor < 0 || major > gres.MaxDeviceNumber || minor > gres.MaxDeviceNumber {
		return 0, 0, fmt.Errorf("%s: %q: want major:minor", path, s)
	}
	return major, minor, nil
}

// readUevent reads a uevent file's KEY=value lines.
func readUevent(path string) map[string]string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			out[k] = v
		}
	}
	return out
}

// linkBase returns the last element of a symbolic link's target (the PCI
// address a device link points to, the driver a driver link names).
func linkBase(path string) (string, error) {
	t, err := os.Readlink(path)
	if err != nil {
		return "", err
	}
	return filepath.Base(t), nil
}

var pciAddrRE = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// validPCI reports whether s is a PCI address in sysfs form
// ("0000:29:00.0").
func validPCI(s string) bool { return pciAddrRE.MatchString(s) }

// numbered lists the entries of dir named prefix<N> (N decimal), sorted by
// N; a missing directory lists nothing.
func numbered(dir, prefix string) []int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || rest == "" || strings.TrimLeft(rest, "0123456789") != "" || len(rest) > 1 && rest[0] == '0' {
			continue
		}
		if n, err := strconv.Atoi(rest); err == nil {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// exists reports whether path exists (following links).
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
