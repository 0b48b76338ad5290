package swf_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler/sim/swf"
)

const header = `; Version: 2.2
; Computer: Test machine
; Information: http://example.org/
;              http://example.org/more: a continuation, not a field
; MaxJobs: 5
; MaxNodes: 8
; MaxProcs: 8
; UnixStartTime: 1000000000
;
`

// line builds an 18-field job line from a base with fields overridden
// (1-based field number → text).
func line(over map[int]string) string {
	f := strings.Fields("1 10 -1 100 4 -1 -1 4 200 -1 1 7 3 -1 -1 -1 -1 -1")
	for k, v := range over {
		f[k-1] = v
	}
	return strings.Join(f, " ")
}

func readAll(t *testing.T, input string, opt swf.Options) ([]swf.Record, swf.Stats, error) {
	t.Helper()
	return readAllF([]byte(input), opt)
}

func TestReaderHeader(t *testing.T) {
	rd, err := swf.NewReader(strings.NewReader(header+line(nil)+"\n"), swf.Options{})
	require.NoError(t, err)
	h := rd.Header()
	assert.Equal(t, int64(5), h.MaxJobs)
	assert.Equal(t, int64(8), h.MaxNodes)
	assert.Equal(t, int64(8), h.MaxProcs)
	assert.Equal(t, int64(8), h.Procs())
	assert.Equal(t, int64(8), rd.Procs())
	assert.Equal(t, time.Date(2001, 9, 9, 1, 46, 40, 0, time.UTC), h.Start())
	v, ok := h.Get("Computer")
	assert.True(t, ok)
	assert.Equal(t, "Test machine", v)
	_, ok = h.Get("http")
	assert.False(t, ok, "an indented continuation line is not a field")
	assert.Len(t, h.Fields, 7)
	assert.Equal(t, 8, h.Fields[6].Line)

	// MaxNodes only: a node is one processor; Options.Procs overrides.
	rd, err = swf.NewReader(strings.NewReader("; MaxNodes: 256\n"+line(nil)), swf.Options{})
	require.NoError(t, err)
	assert.Equal(t, int64(256), rd.Procs())
	assert.True(t, rd.Header().Start().IsZero())
	rd, err = swf.NewReader(strings.NewReader("; MaxNodes: 256\n"+line(nil)), swf.Options{Procs: 64})
	require.NoError(t, err)
	assert.Equal(t, int64(64), rd.Procs())

	// -1 means unknown
	rd, err = swf.NewReader(strings.NewReader("; MaxProcs: -1\n"), swf.Options{})
	require.NoError(t, err)
	assert.Zero(t, rd.Procs())
	assert.Zero(t, rd.Stats().HeaderIssues)
}

func TestReaderBadHeader(t *testing.T) {
	in := "; MaxNodes: 64\n;MaxProcs: lots\n" + line(nil) + "\n"
	rd, err := swf.NewReader(strings.NewReader(in), swf.Options{})
	require.NoError(t, err)
	assert.Equal(t, int64(64), rd.Procs(), "the bad MaxProcs is ignored")
	st := rd.Stats()
	assert.Equal(t, 1, st.HeaderIssues)
	require.Len(t, st.Issues, 1)
	assert.ErrorIs(t, st.Issues[0], swf.ErrHeader)
	assert.Equal(t, `swf: line 2: header MaxProcs "lots": bad header value: not an integer`, st.Issues[0].Error())

	_, err = swf.NewReader(strings.NewReader(in), swf.Options{Strict: true})
	require.ErrorIs(t, err, swf.ErrHeader)
	var le *swf.LineError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, 2, le.Line)

	_, err = swf.NewReader(strings.NewReader("; MaxProcs: 99999999999\n"), swf.Options{Strict: true})
	require.ErrorIs(t, err, swf.ErrHeader)
	assert.Contains(t, err.Error(), "out of range")
}

func TestReaderOptionsValidation(t *testing.T) {
	for _, opt := range []swf.Options{{Procs: -1}, {Procs: 1 << 30}, {Oversize: 9}, {ProcsFrom: 9}, {MaxIssues: -1}} {
		_, err := swf.NewReader(strings.NewReader(""), opt)
		assert.ErrorIs(t, err, swf.ErrInvalidOptions, "%+v", opt)
	}
}

// TestReaderBadLines: every kind of bad line is skipped and counted by
// default, and is an error naming line, field and value under Strict.
func TestReaderBadLines(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		err    error
		field  int
		value  string
		detail string
		count  func(swf.Stats) int
	}{
		{"truncated", "1 10 -1 100 4", swf.ErrSyntax, 0, "1 10 -1 100 4", "5 fields, want 18", func(s swf.Stats) int { return s.Malformed }},
		{"too many fields", line(nil) + " 9", swf.ErrSyntax, 0, "", "more than 18 fields", func(s swf.Stats) int { return s.Malformed }},
		{"garbage", "hello world", swf.ErrSyntax, 0, "hello world", "2 fields, want 18", func(s swf.Stats) int { return s.Malformed }},
		{"not a number", line(map[int]string{4: "12x"}), swf.ErrSyntax, 4, "12x", "not an integer", func(s swf.Stats) int { return s.Malformed }},
		{"fraction in an integer field", line(map[int]string{5: "4.5"}), swf.ErrSyntax, 5, "4.5", "not an integer", func(s swf.Stats) int { return s.Malformed }},
		{"negative time", line(map[int]string{3: "-5"}), swf.ErrSyntax, 3, "-5", "negative", func(s swf.Stats) int { return s.Malformed }},
		{"negative run time", line(map[int]string{4: "-30"}), swf.ErrSyntax, 4, "-30", "negative", func(s swf.Stats) int { return s.Malformed }},
		{"absurd submit", line(map[int]string{2: "99999999999"}), swf.ErrSyntax, 2, "99999999999", "larger than", func(s swf.Stats) int { return s.Malformed }},
		{"absurd processors", line(map[int]string{5: "123456789"}), swf.ErrSyntax, 5, "123456789", "larger than 16777216", func(s swf.Stats) int { return s.Malformed }},
		{"int overflow", line(map[int]string{1: "99999999999999999999"}), swf.ErrSyntax, 1, "99999999999999999999", "not an integer", func(s swf.Stats) int { return s.Malformed }},
		{"NaN memory", line(map[int]string{7: "NaN"}), swf.ErrSyntax, 7, "NaN", "not a number", func(s swf.Stats) int { return s.Malformed }},
		{"huge float", line(map[int]string{6: "1e400"}), swf.ErrSyntax, 6, "1e400", "not a number", func(s swf.Stats) int { return s.Malformed }},
		{"unknown submit", line(map[int]string{2: "-1"}), swf.ErrNoSubmit, 2, "-1", "", func(s swf.Stats) int { return s.NoSubmit }},
		{"zero run time", line(map[int]string{4: "0"}), swf.ErrNoRuntime, 4, "0", "", func(s swf.Stats) int { return s.NoRuntime }},
		{"unknown run time", line(map[int]string{4: "-1"}), swf.ErrNoRuntime, 4, "-1", "", func(s swf.Stats) int { return s.NoRuntime }},
		{"no processors", line(map[int]string{5: "-1", 8: "-1"}), swf.ErrNoProcs, 8, "-1", "both allocated and requested", func(s swf.Stats) int { return s.NoProcs }},
		{"zero processors", line(map[int]string{5: "0", 8: "0"}), swf.ErrNoProcs, 8, "0", "", func(s swf.Stats) int { return s.NoProcs }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := header + line(map[int]string{1: "1"}) + "\n" + tc.line + "\n" + line(map[int]string{1: "3", 2: "20"}) + "\n"
			recs, st, err := readAll(t, in, swf.Options{})
			require.NoError(t, err)
			require.Len(t, recs, 2, "the bad line is skipped, the others kept")
			assert.Equal(t, int64(3), recs[1].Job)
			assert.Equal(t, 1, tc.count(st))
			assert.Equal(t, 1, st.Dropped())
			assert.Equal(t, 3, st.Records)
			assert.Equal(t, 2, st.Jobs)
			require.Len(t, st.Issues, 1)
			checkLineError(t, st.Issues[0], tc.err, 11, tc.field, tc.value, tc.detail)

			recs, _, err = readAll(t, in, swf.Options{Strict: true})
			require.Error(t, err)
			require.Len(t, recs, 1, "strict: the error comes at the bad line")
			var le *swf.LineError
			require.ErrorAs(t, err, &le)
			checkLineError(t, le, tc.err, 11, tc.field, tc.value, tc.detail)
		})
	}
}

func checkLineError(t *testing.T, le *swf.LineError, err error, lineNo, field int, value, detail string) {
	t.Helper()
	assert.ErrorIs(t, le, err)
	assert.Equal(t, lineNo, le.Line)
	assert.Equal(t, field, le.Field)
	if value != "" {
		assert.Equal(t, value, le.Value)
	}
	assert.Contains(t, le.Detail, detail)
	msg := le.Error()
	assert.Contains(t, msg, "line 11")
	if field > 0 {
		assert.Contains(t, msg, swf.FieldName(field))
		assert.Contains(t, msg, `"`+value+`"`)
	}
}

func TestReaderStrictContinues(t *testing.T) {
	in := header + line(map[int]string{4: "0"}) + "\n" + line(map[int]string{1: "2"}) + "\n"
	rd, err := swf.NewReader(strings.NewReader(in), swf.Options{Strict: true})
	require.NoError(t, err)
	_, err = rd.Read()
	require.ErrorIs(t, err, swf.ErrNoRuntime)
	rec, err := rd.Read()
	require.NoError(t, err)
	assert.Equal(t, int64(2), rec.Job)
	_, err = rd.Read()
	assert.Equal(t, io.EOF, err)
	_, err = rd.Read()
	assert.Equal(t, io.EOF, err, "EOF is sticky")
}

func TestReaderCleaning(t *testing.T) {
	lines := []string{
		line(map[int]string{1: "1", 2: "0", 9: "-1"}),             // no estimate: run time
		line(map[int]string{1: "2", 2: "5", 9: "0"}),              // zero estimate: run time
		line(map[int]string{1: "3", 2: "5", 4: "500", 9: "300"}),  // overrun: kept, counted
		line(map[int]string{1: "4", 2: "6", 5: "16", 8: "16"}),    // larger than the machine
		line(map[int]string{1: "5", 2: "7", 5: "-1", 8: "3"}),     // allocated unknown: requested
		line(map[int]string{1: "6", 2: "1"}),                      // out of order
		line(map[int]string{1: "7", 2: "8", 6: "12.5", 7: "1e3"}), // fractional fields
	}
	in := header + strings.Join(lines, "\n") + "\n"
	recs, st, err := readAll(t, in, swf.Options{})
	require.NoError(t, err)
	require.Len(t, recs, 6)
	assert.Equal(t, int64(100), recs[0].ReqTime)
	assert.Equal(t, int64(100), recs[1].ReqTime)
	assert.Equal(t, int64(300), recs[2].ReqTime)
	assert.Equal(t, int64(500), recs[2].Run)
	assert.Equal(t, int64(8), recs[3].Procs, "clipped to the machine")
	assert.Equal(t, int64(16), recs[3].AllocProcs, "the trace's own fields are kept")
	assert.Equal(t, int64(3), recs[4].Procs)
	assert.Equal(t, int64(7), recs[5].Job)
	assert.Equal(t, 12.5, recs[5].AvgCPU)
	assert.Equal(t, 1000.0, recs[5].UsedMem)
	assert.Equal(t, 16, recs[5].Line)
	assert.Equal(t, 2, st.EstimateFilled)
	assert.Equal(t, 1, st.Overrun)
	assert.Equal(t, 1, st.Clipped)
	assert.Equal(t, 1, st.OutOfOrder)
	require.Len(t, st.Issues, 1)
	checkLineErrorAt(t, st.Issues[0], swf.ErrOutOfOrder, 15, swf.FieldSubmit, "1")

	_, st, err = readAll(t, in, swf.Options{Oversize: swf.RejectOversize})
	require.NoError(t, err)
	assert.Equal(t, 1, st.TooLarge)
	assert.Zero(t, st.Clipped)
	checkLineErrorAt(t, st.Issues[0], swf.ErrTooLarge, 13, swf.FieldAllocProcs, "16")

	// Strict: clipping is not a skip, rejection is.
	_, _, err = readAll(t, in, swf.Options{Strict: true})
	require.ErrorIs(t, err, swf.ErrOutOfOrder)
	_, _, err = readAll(t, in, swf.Options{Strict: true, Oversize: swf.RejectOversize})
	require.ErrorIs(t, err, swf.ErrTooLarge)

	// Without a machine size there is nothing to clip against.
	_, st, err = readAll(t, strings.Join(lines, "\n"), swf.Options{})
	require.NoError(t, err)
	assert.Zero(t, st.Clipped)
}

func checkLineErrorAt(t *testing.T, le *swf.LineError, err error, lineNo, field int, value string) {
	t.Helper()
	assert.ErrorIs(t, le, err)
	assert.Equal(t, lineNo, le.Line)
	assert.Equal(t, field, le.Field)
	assert.Equal(t, value, le.Value)
}

func TestReaderProcsFrom(t *testing.T) {
	in := line(map[int]string{5: "4", 8: "6"}) + "\n" + line(map[int]string{5: "5", 8: "-1"}) + "\n"
	for _, tc := range []struct {
		from swf.ProcsFrom
		want []int64
	}{
		{swf.ProcsAllocated, []int64{4, 5}},
		{swf.ProcsRequested, []int64{6, 5}},
		{swf.ProcsMax, []int64{6, 5}},
	} {
		recs, _, err := readAll(t, in, swf.Options{ProcsFrom: tc.from})
		require.NoError(t, err)
		assert.Equal(t, tc.want, []int64{recs[0].Procs, recs[1].Procs}, "ProcsFrom %d", tc.from)
	}
}

func TestReaderLayout(t *testing.T) {
	long := strings.Repeat("9", swf.MaxLineLength+10)
	in := "\r\n; MaxProcs: 8\r\n\r\n" + line(map[int]string{1: "1"}) + "\r\n" +
		"\t" + strings.ReplaceAll(line(map[int]string{1: "2"}), " ", "\t  ") + "\n" +
		"; a comment between jobs\n\n" +
		long + "\n" +
		line(map[int]string{1: "3"}) // no final newline
	recs, st, err := readAll(t, in, swf.Options{})
	require.NoError(t, err)
	require.Len(t, recs, 3)
	assert.Equal(t, []int64{1, 2, 3}, []int64{recs[0].Job, recs[1].Job, recs[2].Job})
	assert.Equal(t, []int{4, 5, 9}, []int{recs[0].Line, recs[1].Line, recs[2].Line})
	assert.Equal(t, 9, st.Lines)
	assert.Equal(t, 2, st.Comments)
	assert.Equal(t, 3, st.Blank)
	assert.Equal(t, 4, st.Records)
	assert.Equal(t, 1, st.Malformed)
	require.Len(t, st.Issues, 1)
	assert.Equal(t, 8, st.Issues[0].Line)
	assert.Contains(t, st.Issues[0].Error(), "line longer than")

	// A long first line (no header) is reported too.
	recs, st, err = readAll(t, long+"\n"+line(nil), swf.Options{})
	require.NoError(t, err)
	assert.Len(t, recs, 1)
	assert.Equal(t, 1, st.Malformed)

	// Empty input, and a header alone.
	recs, st, err = readAll(t, "", swf.Options{})
	require.NoError(t, err)
	assert.Empty(t, recs)
	assert.Zero(t, st.Lines)
	recs, _, err = readAll(t, header, swf.Options{})
	require.NoError(t, err)
	assert.Empty(t, recs)
}

func TestReaderMaxIssues(t *testing.T) {
	var b strings.Builder
	for range 30 {
		b.WriteString("garbage\n")
	}
	_, st, err := readAll(t, b.String(), swf.Options{})
	require.NoError(t, err)
	assert.Equal(t, 30, st.Malformed)
	assert.Len(t, st.Issues, 20)
	_, st, err = readAll(t, b.String(), swf.Options{MaxIssues: 3})
	require.NoError(t, err)
	assert.Len(t, st.Issues, 3)
	assert.Equal(t, 3, st.Issues[2].Line)
}

type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func TestReaderIOError(t *testing.T) {
	boom := errors.New("boom")
	_, err := swf.NewReader(&failingReader{data: []byte("; MaxProcs: 8\n; Note"), err: boom}, swf.Options{})
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "line 2")

	rd, err := swf.NewReader(&failingReader{data: []byte(line(nil) + "\n" + line(nil)), err: boom}, swf.Options{})
	require.NoError(t, err)
	_, err = rd.Read()
	require.NoError(t, err)
	_, err = rd.Read()
	require.ErrorIs(t, err, boom)
	_, err = rd.Read()
	require.ErrorIs(t, err, boom, "I/O errors are sticky")
}

func TestFieldName(t *testing.T) {
	assert.Equal(t, "run time", swf.FieldName(swf.FieldRun))
	assert.Equal(t, "think time", swf.FieldName(swf.FieldThink))
	assert.Equal(t, "field 19", swf.FieldName(19))
}

// FuzzReader: no input makes the reader panic or loop, its counts always
// add up, every record it returns passes the cleaning policy, and writing
// a record and reading it back gives the same record.
func FuzzReader(f *testing.F) {
	f.Add([]byte(header + line(nil) + "\n"))
	f.Add([]byte(header + line(map[int]string{4: "0"}) + "\n" + line(map[int]string{5: "99", 8: "-1"})))
	f.Add([]byte("; MaxProcs: x\n1 2 3\n\x00\xff\n"))
	f.Add([]byte(line(map[int]string{6: "1.5e3", 9: "-1"}) + "\r\n;\n\n" + line(map[int]string{2: "0"})))
	f.Add([]byte("; MaxNodes: 4\n" + line(map[int]string{5: "1e2", 7: "-0.5"})))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, opt := range []swf.Options{{}, {Strict: true}, {Oversize: swf.RejectOversize, ProcsFrom: swf.ProcsMax}} {
			rd, err := swf.NewReader(bytes.NewReader(data), opt)
			if err != nil {
				var le *swf.LineError
				require.ErrorAs(t, err, &le)
				continue
			}
			var buf bytes.Buffer
			w := swf.NewWriter(&buf, time.Time{})
			var recs []swf.Record
			for i := 0; ; i++ {
				require.Less(t, i, len(data)+2, "more records than lines")
				rec, err := rd.Read()
				if err == io.EOF {
					break
				}
				if err != nil {
					var le *swf.LineError
					require.ErrorAs(t, err, &le)
					require.True(t, opt.Strict)
					require.NotEmpty(t, le.Error())
					continue
				}
				require.Positive(t, rec.Run)
				require.Positive(t, rec.Procs)
				require.GreaterOrEqual(t, rec.Submit, int64(0))
				require.Positive(t, rec.ReqTime)
				if p := rd.Procs(); p > 0 {
					require.LessOrEqual(t, rec.Procs, p)
				}
				require.NoError(t, w.WriteRecord(rec))
				recs = append(recs, rec)
			}
			st := rd.Stats()
			require.Equal(t, st.Records, st.Jobs+st.Dropped())
			require.Equal(t, len(recs), st.Jobs)
			require.LessOrEqual(t, st.Records+st.Comments+st.Blank, st.Lines)
			require.NoError(t, w.Flush())
			// Round trip: records written come back the same (machine
			// size unknown in the copy, so nothing is clipped).
			back, bst, err := readAllF(buf.Bytes(), swf.Options{ProcsFrom: opt.ProcsFrom})
			require.NoError(t, err)
			require.Zero(t, bst.Dropped())
			require.Len(t, back, len(recs))
			for i := range recs {
				want := recs[i]
				want.Line = back[i].Line
				if back[i].Procs != want.Procs {
					// clipped: the copy does not know the machine size
					require.Equal(t, rd.Procs(), want.Procs)
					require.Greater(t, back[i].Procs, want.Procs)
					want.Procs = back[i].Procs
				}
				require.Equal(t, want, back[i])
			}
		}
	})
}

func readAllF(data []byte, opt swf.Options) ([]swf.Record, swf.Stats, error) {
	rd, err := swf.NewReader(bytes.NewReader(data), opt)
	if err != nil {
		return nil, swf.Stats{}, err
	}
	var out []swf.Record
	for {
		rec, err := rd.Read()
		if err == io.EOF {
			return out, rd.Stats(), nil
		}
		if err != nil {
			return out, rd.Stats(), err
		}
		out = append(out, rec)
	}
}
