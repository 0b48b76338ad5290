package swf

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
)

// Writer writes SWF: header comments, then one line of 18 fields per job.
// Errors are sticky: after the first, every call returns it.
type Writer struct {
	w     *bufio.Writer
	start time.Time
	buf   []byte
	err   error
}

// NewWriter returns a Writer to w. start is the time written as second 0
// (submit times are relative to it); use the Machine's Start, or the
// simulation's Result.Start for a workload without one. The zero time
// means the Unix epoch, as for Machine.Start.
func NewWriter(w io.Writer, start time.Time) *Writer {
	return &Writer{w: bufio.NewWriter(w), start: epochIfZero(start)}
}

func epochIfZero(t time.Time) time.Time {
	if t.IsZero() {
		return time.Unix(0, 0).UTC()
	}
	return t
}

// WriteHeader writes fields as "; Key: Value" comment lines, followed by
// a line with a lone ";". Write it before the first record.
func (w *Writer) WriteHeader(fields []HeaderField) error {
	for _, f := range fields {
		w.printf("; %s: %s\n", f.Key, f.Value)
	}
	w.printf(";\n")
	return w.err
}

func (w *Writer) printf(format string, args ...any) {
	if w.err == nil {
		_, w.err = fmt.Fprintf(w.w, format, args...)
	}
}

// WriteRecord writes one record as a job line.
func (w *Writer) WriteRecord(r Record) error {
	if w.err != nil {
		return w.err
	}
	b := w.buf[:0]
	for i, v := range [...]int64{r.Job, r.Submit, r.Wait, r.Run, r.AllocProcs} {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, v, 10)
	}
	for _, v := range [...]float64{r.AvgCPU, r.UsedMem} {
		b = append(b, ' ')
		b = strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	for _, v := range [...]int64{r.ReqProcs, r.ReqTime} {
		b = append(b, ' ')
		b = strconv.AppendInt(b, v, 10)
	}
	b = append(b, ' ')
	b = strconv.AppendFloat(b, r.ReqMem, 'f', -1, 64)
	for _, v := range [...]int64{r.Status, r.User, r.Group, r.Exe, r.Queue, r.Partition, r.Preceding, r.Think} {
		b = append(b, ' ')
		b = strconv.AppendInt(b, v, 10)
	}
	b = append(b, '\n')
	w.buf = b
	_, w.err = w.w.Write(b)
	return w.err
}

// WriteResult writes a simulated job as a record (see ResultRecord).
func (w *Writer) WriteResult(r sim.JobResult) error {
	return w.WriteRecord(ResultRecord(r, w.start))
}

// Flush writes any buffered data to the underlying writer.
func (w *Writer) Flush() error {
	if w.err == nil {
		w.err = w.w.Flush()
	}
	return w.err
}

// ResultRecord returns the SWF record of a simulated job, with times
// relative to start (the zero time means the Unix epoch): the simulated
// wait and run times, the allocated processors (CPUs) and a status of 1
// (COMPLETED; -1, unknown, for a job whose trace status was unknown,
// Job.ExitUnknown), 5 (CANCELLED) or 0 (any other end). The average CPU time is
// unknown (-1). When the job came from a trace (its Job.Data is a
// *Record), the other fields are the trace's; otherwise the job number is
// Index+1, the requested processors are the allocated ones and the rest is
// unknown. The requested time is the time limit the job was simulated
// with. Times are rounded to whole seconds so that submit + wait is the
// start and start + run the end.
func ResultRecord(r sim.JobResult, start time.Time) Record {
	start = epochIfZero(start)
	var rec Record
	if orig, ok := r.Job.Data.(*Record); ok && orig != nil {
		rec = *orig
	} else {
		rec = Record{Job: int64(r.Index) + 1, ReqProcs: r.CPUs, UsedMem: -1, ReqMem: -1,
			User: -1, Group: -1, Exe: -1, Queue: -1, Partition: -1, Preceding: -1, Think: -1}
	}
	sec := func(t time.Time) int64 { return int64(t.Sub(start).Round(time.Second) / time.Second) }
	sub, st, end := sec(r.Job.Submit), sec(r.Start), sec(r.End)
	rec.Submit, rec.Wait, rec.Run = sub, st-sub, end-st
	rec.AllocProcs = r.CPUs
	rec.AvgCPU = -1
	rec.ReqTime = int64(r.Job.Spec.TimeLimit.Round(time.Second) / time.Second)
	if rec.ReqTime == 0 {
		rec.ReqTime = -1
	}
	switch r.State {
	case scheduler.JobCompleted:
		rec.Status = 1
		if r.Job.ExitUnknown {
			rec.Status = -1 // ran to its end; how it ended stays unknown
		}
	case scheduler.JobCancelled:
		rec.Status = 5
	default:
		rec.Status = 0
	}
	rec.Line = 0
	return rec
}
