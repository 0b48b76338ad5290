package amd

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/gres/internal/sysfs"
)

// Sentinel errors of this package.
var (
	// ErrUnavailable reports that the node has no KFD topology (the amdgpu
	// driver is not loaded, or Options.Root is not a sysfs tree).
	ErrUnavailable = errors.New("amd: KFD topology unavailable")
	// ErrMalformed reports a sysfs file in an unexpected format (a KFD
	// properties file, a RAS counter, an attribute).
	ErrMalformed = sysfs.ErrMalformed
	// ErrInvalidOptions reports bad Options.
	ErrInvalidOptions = errors.New("amd: invalid options")
)

// maxProperties bounds the keys of one properties file.
const maxProperties = 1024

// Properties are the "key value" lines of a KFD topology properties file
// (nodes/<n>/properties, io_links/<k>/properties, mem_banks/<k>/properties):
// each line a key, one space and an unsigned decimal number.
type Properties map[string]uint64

// ParseProperties reads a KFD properties file: lines "key value" where
// key is made of lower-case letters, digits and '_' and value is an
// unsigned decimal integer that fits in 64 bits. Empty lines are skipped.
// A malformed line, a repeated key, more than 1024 keys or more than
// 64 KiB of input is an error wrapping ErrMalformed and naming the line.
func ParseProperties(r io.Reader) (Properties, error) {
	data, err := io.ReadAll(io.LimitReader(r, sysfs.MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > sysfs.MaxFileBytes {
		return nil, fmt.Errorf("%w: properties longer than %d bytes", ErrMalformed, sysfs.MaxFileBytes)
	}
	p := Properties{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), sysfs.MaxFileBytes)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" {
			continue
		}
		k, v, ok := strings.Cut(t, " ")
		v = strings.TrimSpace(v)
		if !ok || !validKey(k) {
			return nil, fmt.Errorf("%w: properties line %d %q: want \"key value\"", ErrMalformed, line, sysfs.Clip(t))
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: properties line %d: %s %q: want an unsigned decimal integer", ErrMalformed, line, k, sysfs.Clip(v))
		}
		if _, dup := p[k]; dup {
			return nil, fmt.Errorf("%w: properties line %d: key %s repeated", ErrMalformed, line, k)
		}
		if len(p) == maxProperties {
			return nil, fmt.Errorf("%w: properties: more than %d keys", ErrMalformed, maxProperties)
		}
		p[k] = n
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: properties: %w", ErrMalformed, err)
	}
	return p, nil
}

// String formats the properties as a properties file, keys sorted.
func (p Properties) String() string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %d\n", k, p[k])
	}
	return b.String()
}

// get returns the value of key and whether it is present.
func (p Properties) get(key string) (uint64, bool) {
	v, ok := p[key]
	return v, ok
}

// bounded returns the value of key when it is present and at most hi.
func (p Properties) bounded(key string, hi uint64) (uint64, error) {
	v, ok := p[key]
	switch {
	case !ok:
		return 0, fmt.Errorf("%w: no %s", ErrMalformed, key)
	case v > hi:
		return 0, fmt.Errorf("%w: %s %d outside [0, %d]", ErrMalformed, key, v, hi)
	}
	return v, nil
}

func validKey(k string) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
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
