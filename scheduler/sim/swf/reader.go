package swf

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors, wrapped in a *LineError that names the line, the field
// and its value. Use errors.Is to tell the reasons apart, errors.As to get
// the position.
var (
	// ErrSyntax: the line is not 18 numbers (wrong field count, a field
	// that is not a number, a value below -1 or out of range, a line too
	// long). The line is dropped.
	ErrSyntax = errors.New("malformed line")
	// ErrNoSubmit: the submit time is unknown (-1). Dropped.
	ErrNoSubmit = errors.New("unknown submit time")
	// ErrNoRuntime: the run time is unknown or not positive. Dropped.
	ErrNoRuntime = errors.New("run time unknown or not positive")
	// ErrNoProcs: neither allocated nor requested processors are known
	// and positive. Dropped.
	ErrNoProcs = errors.New("no processors")
	// ErrTooLarge: the job asks for more processors than the machine has,
	// and Options.Oversize is RejectOversize. Dropped.
	ErrTooLarge = errors.New("more processors than the machine has")
	// ErrOutOfOrder: the submit time is earlier than the previous job's
	// (SWF files are sorted by submit time). Dropped.
	ErrOutOfOrder = errors.New("submit time earlier than the previous job's")
	// ErrHeader: a header value that should be a number is not. The
	// value is ignored.
	ErrHeader = errors.New("bad header value")
	// ErrInvalidOptions reports Options that NewReader rejects.
	ErrInvalidOptions = errors.New("swf: invalid options")
)

// Field numbers of the 18 SWF fields, 1-based as in the format's
// definition.
const (
	FieldJob        = 1  // job number
	FieldSubmit     = 2  // submit time (s)
	FieldWait       = 3  // wait time (s)
	FieldRun        = 4  // run time (s)
	FieldAllocProcs = 5  // allocated processors
	FieldAvgCPU     = 6  // average CPU time per processor (s)
	FieldUsedMem    = 7  // used memory per processor (KB)
	FieldReqProcs   = 8  // requested processors
	FieldReqTime    = 9  // requested time (s): the user's estimate
	FieldReqMem     = 10 // requested memory per processor (KB)
	FieldStatus     = 11 // 1 completed, 0 failed, 5 cancelled, -1 unknown (see Machine.Job)
	FieldUser       = 12 // user ID
	FieldGroup      = 13 // group ID
	FieldExe        = 14 // executable (application) number
	FieldQueue      = 15 // queue number
	FieldPartition  = 16 // partition number
	FieldPreceding  = 17 // preceding job number
	FieldThink      = 18 // think time after the preceding job (s)
	// NumFields is the number of fields of a job line.
	NumFields = 18
)

// FieldName returns the name of SWF field f (1–18), as used in errors.
func FieldName(f int) string {
	names := [...]string{"line", "job number", "submit time", "wait time", "run time", "allocated processors",
		"average CPU time", "used memory", "requested processors", "requested time", "requested memory",
		"status", "user ID", "group ID", "executable number", "queue number", "partition number",
		"preceding job number", "think time"}
	if f < 0 || f >= len(names) {
		return fmt.Sprintf("field %d", f)
	}
	return names[f]
}

// Limits on field values; larger values are malformed.
const (
	// MaxSeconds bounds the time fields (100 years).
	MaxSeconds = 100 * 365 * 24 * 3600
	// MaxProcsValue bounds the processor fields (2^24, the scheduler's
	// largest task count).
	MaxProcsValue = 1 << 24
	// maxFloat bounds the fractional fields (CPU time, memory).
	maxFloat = 1 << 53
	// MaxLineLength is the longest line the reader accepts.
	MaxLineLength = 64 << 10
)

// Record is one job line. Unknown values are -1. Times are seconds since
// the trace's start.
type Record struct {
	Job        int64
	Submit     int64
	Wait       int64
	Run        int64
	AllocProcs int64
	AvgCPU     float64
	UsedMem    float64
	ReqProcs   int64
	// ReqTime is the user's run-time estimate. The reader replaces an
	// unknown (-1) or zero estimate with the run time.
	ReqTime   int64
	ReqMem    float64
	Status    int64
	User      int64
	Group     int64
	Exe       int64
	Queue     int64
	Partition int64
	Preceding int64
	Think     int64
	// Procs is the processor count the job is simulated with, chosen by
	// Options.ProcsFrom and clipped to the machine (see Options.Oversize).
	// It is set by the reader, not read from the line.
	Procs int64
	// Line is the record's line number in the trace (1-based).
	Line int
}

// Oversize says what the reader does with a job that asks for more
// processors than the machine has.
type Oversize uint8

const (
	// ClipOversize gives such a job the whole machine (the zero value).
	// Clipped jobs are counted in Stats.Clipped.
	ClipOversize Oversize = iota
	// RejectOversize drops such a job (ErrTooLarge).
	RejectOversize
)

// ProcsFrom says which field gives a job's processor count.
type ProcsFrom uint8

const (
	// ProcsAllocated uses the allocated processors (field 5), or the
	// requested ones (field 8) when unknown: what the job really used.
	// The zero value, and what the PWA's own simulators do.
	ProcsAllocated ProcsFrom = iota
	// ProcsRequested uses the requested processors, or the allocated ones
	// when unknown.
	ProcsRequested
	// ProcsMax uses the larger of the two.
	ProcsMax
)

// Options is the reader's cleaning policy. The zero value is the
// documented default: skip and count bad lines, clip oversized jobs to
// the machine size given by the header, use allocated processors.
type Options struct {
	// Strict turns every dropped line into an error returned by Read
	// (the reader stays usable: the next Read continues after that line),
	// and a bad header value into an error from NewReader.
	Strict bool
	// Procs is the machine's processor count, overriding the header's
	// MaxProcs (or MaxNodes). Zero means the header's; when neither is
	// known the reader does no size cleaning.
	Procs int64
	// Oversize is ClipOversize (zero) or RejectOversize.
	Oversize Oversize
	// ProcsFrom chooses the processor field (default ProcsAllocated).
	ProcsFrom ProcsFrom
	// MaxIssues is how many problems Stats.Issues keeps (0 means 20).
	MaxIssues int
}

// Stats counts what the reader saw and what its cleaning policy did.
type Stats struct {
	// Lines counts every line read; Comments the ';' lines (header
	// included) and Blank the empty ones; Records the job lines.
	Lines, Comments, Blank, Records int
	// Jobs counts the records Read returned.
	Jobs int
	// Dropped job lines, by reason (see the sentinel errors).
	Malformed, NoSubmit, NoRuntime, NoProcs, TooLarge, OutOfOrder int
	// Clipped counts jobs given the whole machine (ClipOversize).
	Clipped int
	// EstimateFilled counts jobs whose unknown or zero requested time
	// was replaced by their run time.
	EstimateFilled int
	// Overrun counts kept jobs that ran longer than they requested; under
	// user estimates the scheduler ends them at their limit (TIMEOUT).
	Overrun int
	// HeaderIssues counts header values that could not be used.
	HeaderIssues int
	// Issues holds the first problems (dropped lines and header issues),
	// in line order.
	Issues []*LineError
}

// Dropped returns the number of job lines dropped, all reasons together.
func (s Stats) Dropped() int {
	return s.Malformed + s.NoSubmit + s.NoRuntime + s.NoProcs + s.TooLarge + s.OutOfOrder
}

// LineError is a problem with one line of a trace.
type LineError struct {
	// Line is the 1-based line number.
	Line int
	// Field is the 1-based SWF field (0: the whole line; for header
	// issues, 0 and Key is set).
	Field int
	// Key is the header key, for header issues.
	Key string
	// Value is the offending text (shortened when long).
	Value string
	// Detail says what is wrong with the value, when Err alone does not.
	Detail string
	// Err is the sentinel reason (ErrSyntax, ErrNoRuntime, …).
	Err error
}

// Error formats the problem as "swf: line L: field F (name) "value": reason".
func (e *LineError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "swf: line %d: ", e.Line)
	switch {
	case e.Key != "":
		fmt.Fprintf(&b, "header %s %q: ", e.Key, e.Value)
	case e.Field > 0:
		fmt.Fprintf(&b, "field %d (%s) %q: ", e.Field, FieldName(e.Field), e.Value)
	case e.Value != "":
		fmt.Fprintf(&b, "%q: ", e.Value)
	}
	b.WriteString(e.Err.Error())
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Unwrap returns the sentinel reason.
func (e *LineError) Unwrap() error { return e.Err }

// HeaderField is one "; Key: Value" line of the header.
type HeaderField struct {
	Key, Value string
	Line       int
}

// Header is the comment block at the top of an SWF file.
type Header struct {
	// Fields lists every "Key: Value" comment of the header, in order.
	Fields []HeaderField
	// MaxJobs, MaxRecords, MaxNodes and MaxProcs are the header's values,
	// or 0 when absent, unknown (-1) or unusable.
	MaxJobs, MaxRecords, MaxNodes, MaxProcs int64
	// UnixStartTime is the trace's start as a Unix time (0 when absent).
	UnixStartTime int64
}

// Get returns the value of the first header field named key.
func (h Header) Get(key string) (string, bool) {
	for _, f := range h.Fields {
		if f.Key == key {
			return f.Value, true
		}
	}
	return "", false
}

// Procs returns the machine size in processors: MaxProcs, or MaxNodes
// when only that is given (a node then counts as one processor), or 0
// when the header gives neither.
func (h Header) Procs() int64 {
	if h.MaxProcs > 0 {
		return h.MaxProcs
	}
	return h.MaxNodes
}

// Start returns the time of the trace's second 0 (UnixStartTime, in
// UTC), or the zero time when the header does not give it.
func (h Header) Start() time.Time {
	if h.UnixStartTime <= 0 {
		return time.Time{}
	}
	return time.Unix(h.UnixStartTime, 0).UTC()
}

// Reader streams the job records of an SWF trace, applying its cleaning
// policy (see Options and the package documentation). It reads one line
// at a time, so a trace of any size needs constant memory.
type Reader struct {
	br         *bufio.Reader
	opt        Options
	hdr        Header
	stats      Stats
	line       int
	procs      int64
	lastSubmit int64
	held       []byte // first job line, read while scanning the header
	heldLong   bool   // … or that line was too long
	ioErr      error
	fields     [][]byte
}

// NewReader reads the header of the trace in r (the ';' lines before the
// first job line) and returns a reader positioned at the first job.
func NewReader(r io.Reader, opt Options) (*Reader, error) {
	switch {
	case opt.Procs < 0 || opt.Procs > MaxProcsValue:
		return nil, fmt.Errorf("%w: Procs %d out of range [0, %d]", ErrInvalidOptions, opt.Procs, MaxProcsValue)
	case opt.Oversize > RejectOversize:
		return nil, fmt.Errorf("%w: Oversize %d unknown", ErrInvalidOptions, opt.Oversize)
	case opt.ProcsFrom > ProcsMax:
		return nil, fmt.Errorf("%w: ProcsFrom %d unknown", ErrInvalidOptions, opt.ProcsFrom)
	case opt.MaxIssues < 0:
		return nil, fmt.Errorf("%w: MaxIssues %d is negative", ErrInvalidOptions, opt.MaxIssues)
	}
	if opt.MaxIssues == 0 {
		opt.MaxIssues = 20
	}
	rd := &Reader{br: bufio.NewReaderSize(r, 64<<10), opt: opt, fields: make([][]byte, 0, NumFields+1)}
	for {
		line, long, err := rd.readLine()
		if err != nil {
			if err == io.EOF {
				break
			}
			return nil, err
		}
		if long {
			rd.heldLong = true
			break
		}
		t := bytes.TrimSpace(line)
		if len(t) == 0 {
			rd.stats.Blank++
			continue
		}
		if t[0] != ';' {
			rd.held = bytes.Clone(t)
			break
		}
		rd.stats.Comments++
		if err := rd.headerLine(bytes.TrimRight(line, "\r\n")[bytes.IndexByte(line, ';')+1:]); err != nil {
			return nil, err
		}
	}
	rd.procs = opt.Procs
	if rd.procs == 0 {
		rd.procs = rd.hdr.Procs()
	}
	rd.lastSubmit = -1
	return rd, nil
}

// headerLine parses one "; Key: Value" comment.
func (rd *Reader) headerLine(c []byte) error {
	indent := len(c) - len(bytes.TrimLeft(c, " \t"))
	if indent > 2 {
		return nil // a continuation line of the previous field
	}
	c = bytes.TrimSpace(c)
	i := bytes.IndexByte(c, ':')
	if i <= 0 {
		return nil // free text or a continuation line
	}
	key := string(bytes.TrimSpace(c[:i]))
	for _, r := range key {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return nil
		}
	}
	val := string(bytes.TrimSpace(c[i+1:]))
	rd.hdr.Fields = append(rd.hdr.Fields, HeaderField{Key: key, Value: val, Line: rd.line})
	var dst *int64
	switch key {
	case "MaxJobs":
		dst = &rd.hdr.MaxJobs
	case "MaxRecords":
		dst = &rd.hdr.MaxRecords
	case "MaxNodes":
		dst = &rd.hdr.MaxNodes
	case "MaxProcs":
		dst = &rd.hdr.MaxProcs
	case "UnixStartTime":
		dst = &rd.hdr.UnixStartTime
	default:
		return nil
	}
	limit := int64(MaxProcsValue)
	if key == "UnixStartTime" || key == "MaxJobs" || key == "MaxRecords" {
		limit = 1 << 40
	}
	v, err := strconv.ParseInt(val, 10, 64)
	switch {
	case err != nil:
		return rd.headerIssue(key, val, "not an integer")
	case v == -1:
		return nil
	case v < 0 || v > limit:
		return rd.headerIssue(key, val, fmt.Sprintf("out of range [-1, %d]", limit))
	}
	*dst = v
	return nil
}

func (rd *Reader) headerIssue(key, val, detail string) error {
	e := &LineError{Line: rd.line, Key: key, Value: shorten(val), Detail: detail, Err: ErrHeader}
	if rd.opt.Strict {
		return e
	}
	rd.stats.HeaderIssues++
	rd.note(e)
	return nil
}

// Header returns the trace's header.
func (rd *Reader) Header() Header { return rd.hdr }

// Procs returns the machine size the reader cleans against (Options.Procs
// or the header's), 0 when unknown.
func (rd *Reader) Procs() int64 { return rd.procs }

// Stats returns the counts so far; after io.EOF they describe the whole
// trace.
func (rd *Reader) Stats() Stats {
	s := rd.stats
	s.Issues = append([]*LineError(nil), rd.stats.Issues...)
	return s
}

// Read returns the next job record that passes the cleaning policy, and
// io.EOF after the last. Dropped lines are counted in Stats; with
// Options.Strict, Read returns the first dropped line's *LineError
// instead. Comment lines after the header are counted and skipped.
func (rd *Reader) Read() (Record, error) {
	for {
		var line []byte
		long := false
		switch {
		case rd.held != nil || rd.heldLong:
			line, long = rd.held, rd.heldLong
			rd.held, rd.heldLong = nil, false
		default:
			l, lg, err := rd.readLine()
			if err != nil {
				return Record{}, err
			}
			line, long = bytes.TrimSpace(l), lg
			if long {
				break
			}
			if len(line) == 0 {
				rd.stats.Blank++
				continue
			}
			if line[0] == ';' {
				rd.stats.Comments++
				continue
			}
		}
		rd.stats.Records++
		var rec Record
		var lerr *LineError
		if long {
			lerr = rd.lineErr(0, nil, fmt.Sprintf("line longer than %d bytes", MaxLineLength), ErrSyntax)
		} else {
			rec, lerr = rd.parse(line)
		}
		if lerr == nil {
			lerr = rd.clean(&rec)
		}
		if lerr != nil {
			rd.count(lerr)
			if rd.opt.Strict {
				return Record{}, lerr
			}
			continue
		}
		rd.stats.Jobs++
		return rec, nil
	}
}

// readLine returns the next line, advancing the line counter. A line
// longer than MaxLineLength is skipped and reported by long = true.
func (rd *Reader) readLine() (line []byte, long bool, err error) {
	if rd.ioErr != nil {
		return nil, false, rd.ioErr
	}
	line, err = rd.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		for err == bufio.ErrBufferFull {
			_, err = rd.br.ReadSlice('\n')
		}
		line, long = nil, true
	} else if err == io.EOF && len(line) == 0 {
		rd.ioErr = io.EOF
		return nil, false, io.EOF
	}
	if err != nil && err != io.EOF {
		rd.ioErr = fmt.Errorf("swf: reading line %d: %w", rd.line+1, err)
		return nil, false, rd.ioErr
	}
	rd.line++
	rd.stats.Lines++
	return line, long, nil
}

func (rd *Reader) count(e *LineError) {
	switch {
	case errors.Is(e, ErrSyntax):
		rd.stats.Malformed++
	case errors.Is(e, ErrNoSubmit):
		rd.stats.NoSubmit++
	case errors.Is(e, ErrNoRuntime):
		rd.stats.NoRuntime++
	case errors.Is(e, ErrNoProcs):
		rd.stats.NoProcs++
	case errors.Is(e, ErrTooLarge):
		rd.stats.TooLarge++
	case errors.Is(e, ErrOutOfOrder):
		rd.stats.OutOfOrder++
	}
	rd.note(e)
}

func (rd *Reader) note(e *LineError) {
	if len(rd.stats.Issues) < rd.opt.MaxIssues {
		rd.stats.Issues = append(rd.stats.Issues, e)
	}
}

func (rd *Reader) lineErr(field int, val []byte, detail string, err error) *LineError {
	return &LineError{Line: rd.line, Field: field, Value: shorten(string(val)), Detail: detail, Err: err}
}

func shorten(s string) string {
	const n = 40
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// parse splits a job line into its 18 fields and checks each value.
func (rd *Reader) parse(line []byte) (Record, *LineError) {
	f := rd.fields[:0]
	for i := 0; i < len(line); {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		j := i
		for j < len(line) && !isSpace(line[j]) {
			j++
		}
		if j > i {
			if len(f) == NumFields {
				return Record{}, rd.lineErr(0, line, fmt.Sprintf("more than %d fields", NumFields), ErrSyntax)
			}
			f = append(f, line[i:j])
		}
		i = j
	}
	rd.fields = f
	if len(f) != NumFields {
		return Record{}, rd.lineErr(0, line, fmt.Sprintf("%d fields, want %d", len(f), NumFields), ErrSyntax)
	}
	// The integer fields are checked first, in field order, then the
	// fractional ones: the first bad value is the one reported.
	ints := [...]struct {
		field uint8
		max   int64
	}{
		{FieldJob, math.MaxInt64},
		{FieldSubmit, MaxSeconds},
		{FieldWait, MaxSeconds},
		{FieldRun, MaxSeconds},
		{FieldAllocProcs, MaxProcsValue},
		{FieldReqProcs, MaxProcsValue},
		{FieldReqTime, MaxSeconds},
		{FieldStatus, math.MaxInt64},
		{FieldUser, math.MaxInt64},
		{FieldGroup, math.MaxInt64},
		{FieldExe, math.MaxInt64},
		{FieldQueue, math.MaxInt64},
		{FieldPartition, math.MaxInt64},
		{FieldPreceding, math.MaxInt64},
		{FieldThink, MaxSeconds},
	}
	var iv [NumFields + 1]int64 // by field number
	for _, x := range ints {
		b := f[x.field-1]
		v, ok := parseInt(b)
		switch {
		case !ok:
			return Record{}, rd.lineErr(int(x.field), b, "not an integer", ErrSyntax)
		case v < -1:
			return Record{}, rd.lineErr(int(x.field), b, "negative (only -1, unknown, is allowed)", ErrSyntax)
		case v > x.max:
			return Record{}, rd.lineErr(int(x.field), b, fmt.Sprintf("larger than %d", x.max), ErrSyntax)
		}
		iv[x.field] = v
	}
	var fv [NumFields + 1]float64 // by field number
	for _, field := range [...]uint8{FieldAvgCPU, FieldUsedMem, FieldReqMem} {
		b := f[field-1]
		v, ok := parseFloat(b)
		switch {
		case !ok:
			return Record{}, rd.lineErr(int(field), b, "not a number", ErrSyntax)
		case v < -1:
			return Record{}, rd.lineErr(int(field), b, "negative (only -1, unknown, is allowed)", ErrSyntax)
		case v > maxFloat:
			return Record{}, rd.lineErr(int(field), b, "larger than 2^53", ErrSyntax)
		}
		fv[field] = v
	}
	return Record{
		Job: iv[FieldJob], Submit: iv[FieldSubmit], Wait: iv[FieldWait], Run: iv[FieldRun],
		AllocProcs: iv[FieldAllocProcs], AvgCPU: fv[FieldAvgCPU], UsedMem: fv[FieldUsedMem],
		ReqProcs: iv[FieldReqProcs], ReqTime: iv[FieldReqTime], ReqMem: fv[FieldReqMem],
		Status: iv[FieldStatus], User: iv[FieldUser], Group: iv[FieldGroup], Exe: iv[FieldExe],
		Queue: iv[FieldQueue], Partition: iv[FieldPartition], Preceding: iv[FieldPreceding],
		Think: iv[FieldThink], Line: rd.line,
	}, nil
}

// clean applies the cleaning policy to a well-formed record.
func (rd *Reader) clean(rec *Record) *LineError {
	num := func(v int64) []byte { return strconv.AppendInt(nil, v, 10) }
	if rec.Submit < 0 {
		return rd.lineErr(FieldSubmit, num(rec.Submit), "", ErrNoSubmit)
	}
	if rec.Run <= 0 {
		return rd.lineErr(FieldRun, num(rec.Run), "", ErrNoRuntime)
	}
	pf, alt := rec.AllocProcs, rec.ReqProcs
	field := FieldAllocProcs
	switch rd.opt.ProcsFrom {
	case ProcsRequested:
		pf, alt, field = rec.ReqProcs, rec.AllocProcs, FieldReqProcs
	case ProcsMax:
		if rec.ReqProcs > rec.AllocProcs {
			pf, alt, field = rec.ReqProcs, rec.AllocProcs, FieldReqProcs
		}
	}
	if pf <= 0 {
		pf = alt
		if field == FieldAllocProcs {
			field = FieldReqProcs
		} else {
			field = FieldAllocProcs
		}
	}
	if pf <= 0 {
		return rd.lineErr(field, num(pf), "both allocated and requested processors unknown", ErrNoProcs)
	}
	if rd.procs > 0 && pf > rd.procs {
		if rd.opt.Oversize == RejectOversize {
			return rd.lineErr(field, num(pf), fmt.Sprintf("machine has %d", rd.procs), ErrTooLarge)
		}
		rd.stats.Clipped++
		pf = rd.procs
	}
	if rec.Submit < rd.lastSubmit {
		return rd.lineErr(FieldSubmit, num(rec.Submit), fmt.Sprintf("previous job submitted at %d", rd.lastSubmit), ErrOutOfOrder)
	}
	rec.Procs = pf
	rd.lastSubmit = rec.Submit
	if rec.ReqTime <= 0 {
		rec.ReqTime = rec.Run
		rd.stats.EstimateFilled++
	} else if rec.Run > rec.ReqTime {
		rd.stats.Overrun++
	}
	return nil
}

// isSpace reports whether c separates fields. Every such byte is at most
// ' ', so the digits of the fields are told apart with one comparison.
func isSpace(c byte) bool {
	return c <= ' ' && (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f')
}

// parseInt parses an optionally signed decimal integer without
// allocating; it rejects overflow.
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	if neg {
		return -int64(v), true
	}
	return int64(v), true
}

// parseFloat parses a finite decimal number (integers take a fast path).
func parseFloat(b []byte) (float64, bool) {
	if v, ok := parseInt(b); ok && v >= -1<<53 && v <= 1<<53 {
		return float64(v), true
	}
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E') {
			return 0, false
		}
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}
