package journal

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
)

// The journal file is buntdb's append-only log: one Redis-protocol SET
// command per record, "*3\r\n$3\r\nset\r\n$<n>\r\n<key>\r\n$<m>\r\n<value>\r\n".
// Every value ends in a CRC-32C of its key and the rest of the value, so
// that a scan finds damage to the record. The records:
//
//	m                  the header: {"format":"sluice-journal","version":1}, always first
//	s                  the snapshot the events continue from (a snapshotRef, JSON)
//	e<seq, 16 hex>     an event: a format byte ('B' compact binary, 'J' JSON) and the entry
//
// The file holds no deletes: WriteSnapshot writes a new file without the
// events the snapshot covers and renames it over the old one.

const (
	metaKey     = "m"
	snapshotKey = "s"
	eventPrefix = 'e'
	eventKeyLen = 17

	formatName    = "sluice-journal"
	formatVersion = 1

	recBinary = 'B'
	recJSON   = 'J'

	maxPart = 1 << 30 // the largest key or value a scan accepts
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is the meta record's payload.
type header struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
}

// snapshotRef is the snapshot record's payload: the snapshot file and the
// last event sequence number it covers.
type snapshotRef struct {
	Seq   uint64 `json:"seq"`
	File  string `json:"file"`
	Size  int64  `json:"size"`
	CRC32 uint32 `json:"crc32c"`
}

// eventKey returns the key of event seq.
func eventKey(seq uint64) string {
	var b [eventKeyLen]byte
	b[0] = eventPrefix
	const hexdigits = "0123456789abcdef"
	for i := eventKeyLen - 1; i > 0; i-- {
		b[i] = hexdigits[seq&15]
		seq >>= 4
	}
	return string(b[:])
}

// keySeq returns the sequence number of an event key.
func keySeq(key []byte) (uint64, bool) {
	if len(key) != eventKeyLen || key[0] != eventPrefix {
		return 0, false
	}
	seq, err := strconv.ParseUint(string(key[1:]), 16, 64)
	return seq, err == nil
}

// seal returns payload followed by the CRC-32C of key and payload.
func seal(key string, payload []byte) []byte {
	c := crc32.Update(crc32.Checksum([]byte(key), castagnoli), castagnoli, payload)
	return binary.BigEndian.AppendUint32(payload, c)
}

// unseal checks a sealed value and returns its payload.
func unseal(key, val []byte) ([]byte, bool) {
	if len(val) < 4 {
		return nil, false
	}
	p := val[:len(val)-4]
	c := crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, p)
	return p, binary.BigEndian.Uint32(val[len(val)-4:]) == c
}

// setCommand appends the RESP form of SET key val to b.
func setCommand(b []byte, key string, val []byte) []byte {
	b = append(b, "*3\r\n$3\r\nset\r\n$"...)
	b = strconv.AppendInt(b, int64(len(key)), 10)
	b = append(b, "\r\n"...)
	b = append(b, key...)
	b = append(b, "\r\n$"...)
	b = strconv.AppendInt(b, int64(len(val)), 10)
	b = append(b, "\r\n"...)
	b = append(b, val...)
	return append(b, "\r\n"...)
}

// errCut reports a command that the end of the input cuts off.
var errCut = errors.New("record cut off by the end of the file")

// parseSet parses one SET command at the start of b: its key, its sealed
// value and its length. It returns errCut when b ends inside it, and
// another error when the bytes are not a journal record.
func parseSet(b []byte) (key, val []byte, n int, err error) {
	if len(b) > 0 && b[0] == 0 {
		return nil, nil, 0, errors.New("NUL bytes where a record should start")
	}
	var parts [3][]byte
	off := 0
	line := func(lead byte) (int, error) {
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			if len(b)-off > 24 {
				return 0, fmt.Errorf("no line end after %q", b[off:off+24])
			}
			return 0, errCut
		}
		l := b[off : off+i+1]
		if len(l) < 4 || l[0] != lead || l[len(l)-2] != '\r' {
			return 0, fmt.Errorf("bad record framing %q", l)
		}
		v, err := strconv.Atoi(string(l[1 : len(l)-2]))
		if err != nil || v < 0 || v > maxPart {
			return 0, fmt.Errorf("bad length in %q", l)
		}
		off += len(l)
		return v, nil
	}
	cnt, err := line('*')
	if err != nil {
		return nil, nil, 0, err
	}
	if cnt != 3 {
		return nil, nil, 0, fmt.Errorf("a command of %d parts (a journal record has 3)", cnt)
	}
	for i := range parts {
		l, err := line('$')
		if err != nil {
			return nil, nil, 0, err
		}
		if len(b)-off < l+2 {
			return nil, nil, 0, errCut
		}
		if b[off+l] != '\r' || b[off+l+1] != '\n' {
			return nil, nil, 0, fmt.Errorf("part %d does not end in CRLF", i)
		}
		parts[i] = b[off : off+l]
		off += l + 2
	}
	if string(parts[0]) != "set" {
		return nil, nil, 0, fmt.Errorf("a %q command (a journal record is a set)", parts[0])
	}
	return parts[1], parts[2], off, nil
}

// Torn describes the torn last record that Open dropped: the bytes a
// crash left half-written at the end of the file.
type Torn struct {
	Offset int64  `json:"offset"`        // where it started (the file's size now)
	Bytes  int64  `json:"bytes"`         // bytes dropped
	Key    string `json:"key,omitempty"` // its key, when that much was written
	Reason string `json:"reason"`        // what was wrong with it
}

// scanned is what a scan of the file found.
type scanned struct {
	size     int64        // the file's size
	good     int64        // the end of the last intact record
	snapshot *snapshotRef // the snapshot record, if any
	last     uint64       // the last event's sequence number (0: none)
	events   int          // events in the file
	torn     *Torn        // a torn last record
}

// scanFile reads the whole file at path, checking every record, and
// classifies the first bad one: followed by an intact record it is
// damage (a *CorruptError wrapping ErrCorrupt); at the end of the file it
// is a torn tail (scanned.torn). A missing or empty file scans as empty.
// visit, if not nil, is called with every intact record after the header
// (its key and payload, valid until it returns); its error stops the scan.
func scanFile(path string, visit func(key, payload []byte) error) (scanned, error) {
	var sc scanned
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return sc, nil
	}
	if err != nil {
		return sc, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return sc, fmt.Errorf("journal: %w", err)
	}
	sc.size = st.Size()
	buf := make([]byte, 0, 1<<20)
	var off int64 // file offset of buf[0]
	eof := false
	for {
		if len(buf) == 0 && eof {
			return sc, nil
		}
		key, val, n, err := parseSet(buf)
		if errors.Is(err, errCut) && !eof {
			// Refill: keep the unparsed bytes, read more.
			if cap(buf)-len(buf) < 1<<16 {
				nb := make([]byte, len(buf), max(1<<20, 2*len(buf)+1<<16))
				copy(nb, buf)
				buf = nb
			}
			m, rerr := f.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+m]
			if rerr == io.EOF {
				eof = true
			} else if rerr != nil {
				return sc, fmt.Errorf("journal: %s: %w", path, rerr)
			}
			continue
		}
		reason, intact := "", false
		if err != nil {
			reason = err.Error()
		} else {
			reason, intact = sc.record(key, val, off == 0)
		}
		if reason != "" {
			return sc, sc.bad(f, path, off, key, reason, intact)
		}
		if visit != nil && off > 0 {
			if err := visit(key, val[:len(val)-4]); err != nil {
				return sc, err
			}
		}
		off += int64(n)
		sc.good = off
		buf = buf[n:]
	}
}

// record checks one parsed record and takes in what it says; it returns
// why the record is bad, or "", and whether its checksum was intact (a
// record written whole that says something wrong, not a torn write).
func (sc *scanned) record(key, val []byte, first bool) (string, bool) {
	payload, ok := unseal(key, val)
	if !ok {
		return "checksum mismatch", false
	}
	return sc.payload(key, payload, first), true
}

// payload checks and takes in an intact record.
func (sc *scanned) payload(key, payload []byte, first bool) string {
	switch {
	case first != (string(key) == metaKey):
		return "the header record is not first"
	case first:
		var h header
		if json.Unmarshal(payload, &h) != nil || h.Format != formatName {
			return "not a journal header"
		}
		if h.Version != formatVersion {
			return fmt.Sprintf("format version %d (this package reads %d)", h.Version, formatVersion)
		}
	case string(key) == snapshotKey:
		var ref snapshotRef
		if err := json.Unmarshal(payload, &ref); err != nil {
			return fmt.Sprintf("bad snapshot record: %v", err)
		}
		if sc.events > 0 {
			return "a snapshot record after events"
		}
		sc.snapshot = &ref
	default:
		seq, ok := keySeq(key)
		switch {
		case !ok:
			return "not a journal key"
		case seq <= sc.last || (sc.snapshot != nil && seq <= sc.snapshot.Seq):
			return fmt.Sprintf("event %d out of order", seq)
		case len(payload) == 0 || (payload[0] != recBinary && payload[0] != recJSON):
			return "unknown record format"
		}
		sc.last = seq
		sc.events++
	}
	return ""
}

// bad classifies the bad record at off: damage if it is intact (its
// checksum matches) or an intact record follows it, else a torn tail.
func (sc *scanned) bad(f *os.File, path string, off int64, key []byte, reason string, intact bool) error {
	if off == 0 {
		return fmt.Errorf("%w: %s: %s at byte offset 0", ErrNotJournal, path, reason)
	}
	rest := make([]byte, sc.size-off)
	if _, err := f.ReadAt(rest, off); err != nil && err != io.EOF {
		return fmt.Errorf("journal: %s: %w", path, err)
	}
	ce := &CorruptError{Path: path, Offset: off, Key: string(key), Reason: reason, Err: ErrCorrupt}
	if seq, ok := keySeq(key); ok {
		ce.Seq = seq
	}
	if intact || intactAfter(rest) {
		return ce
	}
	sc.torn = &Torn{Offset: off, Bytes: sc.size - off, Key: string(key), Reason: reason}
	return nil
}

// intactAfter reports whether an intact record starts anywhere in b after
// its first byte.
func intactAfter(b []byte) bool {
	start := []byte("*3\r\n$3\r\nset\r\n")
	for i := 1; i < len(b); {
		j := bytes.Index(b[i:], start)
		if j < 0 {
			return false
		}
		if key, val, _, err := parseSet(b[i+j:]); err == nil {
			if _, ok := unseal(key, val); ok {
				return true
			}
		}
		i += j + 1
	}
	return false
}

// writeFile writes a new journal file at path: the header, then the
// records records passes to add, and fsyncs it. On failure it removes
// the file.
func writeFile(path string, records func(add func(key string, payload []byte) error) error) error {
	err := syncPath(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, func(f *os.File) error {
		w := bufio.NewWriterSize(f, 1<<20)
		var cmd []byte
		add := func(key string, payload []byte) error {
			cmd = setCommand(cmd[:0], key, seal(key, payload))
			_, err := w.Write(cmd)
			return err
		}
		h, _ := json.Marshal(header{Format: formatName, Version: formatVersion})
		err := add(metaKey, h)
		if err == nil && records != nil {
			err = records(add)
		}
		if err == nil {
			err = w.Flush()
		}
		return err
	})
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("journal: write %s: %w", path, err)
	}
	return nil
}

// truncateFile cuts the file at path to size and fsyncs it.
func truncateFile(path string, size int64) error {
	err := syncPath(path, os.O_RDWR, func(f *os.File) error { return f.Truncate(size) })
	if err != nil {
		return fmt.Errorf("journal: drop torn tail of %s at %d: %w", path, size, err)
	}
	return nil
}

// syncDir fsyncs a directory, making a rename in it durable.
func syncDir(dir string) error { return syncPath(dir, os.O_RDONLY, nil) }

// syncPath opens path (created 0644 with O_CREATE), runs fn (if any) on
// it, then fsyncs and closes it.
func syncPath(path string, flag int, fn func(*os.File) error) error {
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return err
	}
	if fn != nil {
		err = fn(f)
	}
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}
