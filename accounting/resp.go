package accounting

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// The buntdb file is an append-only log of Redis-protocol commands
// (RESP arrays): "*3\r\n$3\r\nset\r\n$<n>\r\n<key>\r\n$<m>\r\n<value>\r\n" and
// "*2\r\n$3\r\ndel\r\n$<n>\r\n<key>\r\n". The ledger appends a CRC-32C of key
// and value to every value, and ends every transaction with a second
// write of the commit record "~c" (an 8-byte sequence number), so a scan
// can tell committed transactions from a crash's leftovers and locate
// damage to the byte.

var crcTable = crc32.MakeTable(crc32.Castagnoli)

const (
	commitKey = "~c"
	maxPart   = 1 << 30 // largest key or value accepted when scanning
)

func sealValue(key, val string) string {
	c := crc32.Update(crc32.Checksum([]byte(key), crcTable), crcTable, []byte(val))
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], c)
	return val + string(b[:])
}

func commitValue(seq uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	return string(b[:])
}

type respCmd struct {
	del      bool
	key, val []byte // views into the input; val still sealed
	size     int64  // bytes consumed
}

// errIncomplete reports a command cut off by the end of the input.
var errIncomplete = errors.New("command cut off by end of file")

var errNUL = errors.New("NUL byte")

type frameError struct{ reason string }

func (e *frameError) Error() string { return e.reason }

// parseCmd parses one command at the start of b. It returns errIncomplete
// when b ends inside the command, errNUL at a NUL byte and a *frameError
// when the bytes are not a valid ledger command.
func parseCmd(b []byte) (respCmd, error) {
	var c respCmd
	if len(b) == 0 {
		return c, errIncomplete
	}
	if b[0] == 0 {
		return c, errNUL
	}
	pos := 0
	n, err := parseHeader(b, &pos, '*')
	if err != nil {
		return c, err
	}
	if n != 2 && n != 3 {
		return c, &frameError{fmt.Sprintf("command with %d parts", n)}
	}
	var parts [3][]byte
	for i := range n {
		ln, err := parseHeader(b, &pos, '$')
		if err != nil {
			return c, err
		}
		if ln > maxPart {
			return c, &frameError{fmt.Sprintf("part of %d bytes", ln)}
		}
		if pos+ln+2 > len(b) {
			return c, errIncomplete
		}
		if b[pos+ln] != '\r' || b[pos+ln+1] != '\n' {
			return c, &frameError{"part not terminated by CRLF"}
		}
		parts[i] = b[pos : pos+ln]
		pos += ln + 2
	}
	c.size = int64(pos)
	switch {
	case n == 3 && string(parts[0]) == "set":
		c.key, c.val = parts[1], parts[2]
	case n == 2 && string(parts[0]) == "del":
		c.key, c.del = parts[1], true
	default:
		return c, &frameError{fmt.Sprintf("unexpected command %q", parts[0])}
	}
	return c, nil
}

// parseHeader parses "<kind><decimal>\r\n" at b[*pos:].
func parseHeader(b []byte, pos *int, kind byte) (int, error) {
	p := *pos
	if p >= len(b) {
		return 0, errIncomplete
	}
	if b[p] != kind {
		return 0, &frameError{fmt.Sprintf("expected %q, found byte 0x%02x", kind, b[p])}
	}
	p++
	n, digits := 0, 0
	for {
		if p >= len(b) {
			return 0, errIncomplete
		}
		c := b[p]
		p++
		if c == '\r' {
			if p >= len(b) {
				return 0, errIncomplete
			}
			if b[p] != '\n' || digits == 0 {
				return 0, &frameError{"bad length line"}
			}
			*pos = p + 1
			return n, nil
		}
		if c < '0' || c > '9' || digits >= 10 {
			return 0, &frameError{"bad length digits"}
		}
		n = n*10 + int(c-'0')
		digits++
	}
}

// checkSealed reports whether the sealed value's checksum matches and
// returns the value without it.
func checkSealed(key, sealed []byte) ([]byte, bool) {
	if len(sealed) < 4 {
		return nil, false
	}
	val := sealed[:len(sealed)-4]
	want := binary.LittleEndian.Uint32(sealed[len(sealed)-4:])
	return val, crc32.Update(crc32.Checksum(key, crcTable), crcTable, val) == want
}

// scanner reads commands from a file through a reusable window.
type scanner struct {
	r     io.Reader
	buf   []byte
	start int   // first unparsed byte in buf
	end   int   // end of valid data in buf
	off   int64 // file offset of buf[start]
	eof   bool
}

func newScanner(r io.Reader, size int64) *scanner {
	return &scanner{r: r, buf: make([]byte, min(4<<20, max(size+1, 4096)))}
}

// next returns the next command (views valid until the following call),
// io.EOF at a clean end, or a parse error at offset s.off.
func (s *scanner) next() (respCmd, error) {
	for {
		c, err := parseCmd(s.buf[s.start:s.end])
		if err == errIncomplete && !s.eof {
			if err := s.fill(); err != nil {
				return c, err
			}
			continue
		}
		if err == errIncomplete && s.start == s.end {
			return c, io.EOF
		}
		if err == nil {
			s.start += int(c.size)
			s.off += c.size
		}
		return c, err
	}
}

// fill moves the unparsed bytes to the front (growing the window when a
// command is larger than it) and reads more.
func (s *scanner) fill() error {
	if s.start > 0 {
		copy(s.buf, s.buf[s.start:s.end])
		s.end -= s.start
		s.start = 0
	}
	if s.end == len(s.buf) {
		s.buf = append(s.buf, make([]byte, len(s.buf))...)
	}
	n, err := io.ReadAtLeast(s.r, s.buf[s.end:], 1)
	s.end += n
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		s.eof = true
		return nil
	}
	return err
}

// commitPrefix starts every commit record.
var commitPrefix = []byte("*3\r\n$3\r\nset\r\n$2\r\n~c\r\n$12\r\n")

// hasCommitAfter reports whether data holds an intact commit record.
func hasCommitAfter(data []byte) bool {
	for {
		i := bytes.Index(data, commitPrefix)
		if i < 0 {
			return false
		}
		data = data[i:]
		c, err := parseCmd(data)
		if err == nil && !c.del && string(c.key) == commitKey {
			if v, ok := checkSealed(c.key, c.val); ok && len(v) == 8 {
				return true
			}
		}
		data = data[1:]
	}
}
