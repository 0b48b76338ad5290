package accounting

import (
	"encoding/binary"
	"math"
	"strconv"
)

// Compact binary encoding of high-volume records (jobs, steps, rollups,
// decisions, usage). Strings that repeat across records (cluster, user,
// account, partition, QOS, TRES and factor names, reasons) are interned:
// stored once under "t:<id>" and referenced by a varint ID.

const codecVersion = 1

type enc struct{ b []byte }

func (e *enc) byte1(c byte)  { e.b = append(e.b, c) }
func (e *enc) u(v uint64)    { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) i(v int64)     { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) f(v float64)   { e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v)) }
func (e *enc) str(s string)  { e.u(uint64(len(s))); e.b = append(e.b, s...) }
func (e *enc) bytes() string { return string(e.b) }

type dec struct {
	b   []byte
	err string // first failure
}

func (d *dec) fail(msg string) {
	if d.err == "" {
		d.err = msg
	}
	d.b = nil
}

func (d *dec) byte1() byte {
	if len(d.b) < 1 {
		d.fail("short record")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *dec) u() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) i() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) f() float64 {
	if len(d.b) < 8 {
		d.fail("short float")
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

func (d *dec) str() string {
	n := d.u()
	if n > uint64(len(d.b)) {
		d.fail("string length " + strconv.FormatUint(n, 10) + " past end of record")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// count reads a collection length and checks it against the remaining
// bytes (each element needs at least min bytes), so corrupt lengths cannot
// make decoders allocate huge slices.
func (d *dec) count(min int) int {
	n := d.u()
	if n > uint64(len(d.b)/max(min, 1)) {
		d.fail("collection length " + strconv.FormatUint(n, 10) + " past end of record")
		return 0
	}
	return int(n)
}

func (d *dec) errOr(s string) string {
	if d.err != "" {
		return d.err
	}
	return s
}

func (d *dec) done() bool { return d.err == "" && len(d.b) == 0 }

// Key helpers: fixed-width lower-case hex so that key order is numeric order.

func hexN(v uint64, width int) string {
	var buf [16]byte
	const digits = "0123456789abcdef"
	for i := width - 1; i >= 0; i-- {
		buf[i] = digits[v&15]
		v >>= 4
	}
	return string(buf[:width])
}

func parseHex(s string) (uint64, bool) {
	if s == "" || len(s) > 16 {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 16, 64)
	return v, err == nil
}

func hex8(v uint32) string  { return hexN(uint64(v), 8) }
func hex16(v uint64) string { return hexN(v, 16) }

// hexT encodes unix seconds (≥ 0, < 2^40) in 10 hex digits.
func hexT(unix int64) string {
	if unix < 0 {
		unix = 0
	}
	return hexN(uint64(unix), 10)
}
