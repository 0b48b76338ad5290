package accounting

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/gres"
)

// ExportFormat selects how JobWriter writes job records.
type ExportFormat uint8

// Export formats.
const (
	// FormatCSV writes RFC 4180 CSV with a header row.
	FormatCSV ExportFormat = iota
	// FormatParsable writes '|'-separated fields with a trailing '|', as
	// sacct --parsable does. Like sacct it does not escape '|' inside
	// free text (job names, reasons); use CSV or JSON for those.
	FormatParsable
	// FormatParsable2 is FormatParsable without the trailing '|'
	// (sacct --parsable2).
	FormatParsable2
	// FormatJSON writes a JSON array of full JobRecords (Fields is
	// ignored).
	FormatJSON
)

// ParseExportFormat parses "csv", "parsable", "parsable2" or "json".
func ParseExportFormat(s string) (ExportFormat, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "csv":
		return FormatCSV, nil
	case "parsable":
		return FormatParsable, nil
	case "parsable2":
		return FormatParsable2, nil
	case "json":
		return FormatJSON, nil
	}
	return 0, fmt.Errorf("%w: export format %q (want csv, parsable, parsable2 or json)", ErrInvalid, s)
}

// DefaultJobFields returns the columns JobWriter writes when
// ExportOptions.Fields is empty.
func DefaultJobFields() []string {
	return []string{"JobID", "JobName", "User", "Account", "Partition", "QOS", "State", "ExitCode",
		"Submit", "Start", "End", "Elapsed", "AllocTRES", "NodeList"}
}

// jobFields maps sacct's field names to formatters.
var jobFields = map[string]func(j *JobRecord, o *ExportOptions) string{
	"JobID": func(j *JobRecord, _ *ExportOptions) string {
		if j.HetJobID != 0 {
			return fmt.Sprintf("%d+%d", j.HetJobID, j.HetJobOffset)
		}
		if j.ArrayJobID != 0 {
			return fmt.Sprintf("%d_%d", j.ArrayJobID, j.ArrayTaskID)
		}
		return strconv.FormatUint(uint64(j.ID), 10)
	},
	"JobIDRaw":    func(j *JobRecord, _ *ExportOptions) string { return strconv.FormatUint(uint64(j.ID), 10) },
	"JobName":     func(j *JobRecord, _ *ExportOptions) string { return j.Name },
	"Cluster":     func(j *JobRecord, _ *ExportOptions) string { return j.Cluster },
	"User":        func(j *JobRecord, _ *ExportOptions) string { return j.User },
	"Account":     func(j *JobRecord, _ *ExportOptions) string { return j.Account },
	"AssocID":     func(j *JobRecord, _ *ExportOptions) string { return strconv.FormatUint(uint64(j.Assoc), 10) },
	"Partition":   func(j *JobRecord, _ *ExportOptions) string { return j.Partition },
	"QOS":         func(j *JobRecord, _ *ExportOptions) string { return j.QOS },
	"Reservation": func(j *JobRecord, _ *ExportOptions) string { return j.Reservation },
	"State":       func(j *JobRecord, _ *ExportOptions) string { return j.State.String() },
	"ExitCode":    func(j *JobRecord, _ *ExportOptions) string { return fmt.Sprintf("%d:%d", j.ExitCode, j.ExitSignal) },
	"Submit":      func(j *JobRecord, o *ExportOptions) string { return o.time(j.Submit) },
	"Eligible":    func(j *JobRecord, o *ExportOptions) string { return o.time(j.Eligible) },
	"Start":       func(j *JobRecord, o *ExportOptions) string { return o.time(j.Start) },
	"End":         func(j *JobRecord, o *ExportOptions) string { return o.time(j.End) },
	"Elapsed":     func(j *JobRecord, o *ExportOptions) string { return FormatDuration(j.Elapsed(o.Now)) },
	"ElapsedRaw": func(j *JobRecord, o *ExportOptions) string {
		return strconv.FormatInt(int64(j.Elapsed(o.Now)/time.Second), 10)
	},
	"Timelimit": func(j *JobRecord, _ *ExportOptions) string {
		if j.TimeLimit == 0 {
			return "UNLIMITED"
		}
		return FormatDuration(j.TimeLimit)
	},
	"ReqTRES":   func(j *JobRecord, _ *ExportOptions) string { return FormatTRES(j.ReqTRES) },
	"AllocTRES": func(j *JobRecord, _ *ExportOptions) string { return FormatTRES(j.AllocTRES) },
	"NNodes": func(j *JobRecord, _ *ExportOptions) string {
		if n, ok := j.AllocTRES["node"]; ok {
			return strconv.FormatInt(n, 10)
		}
		return strconv.FormatInt(j.ReqTRES["node"], 10)
	},
	"NCPUS": func(j *JobRecord, _ *ExportOptions) string {
		if n, ok := j.AllocTRES["cpu"]; ok {
			return strconv.FormatInt(n, 10)
		}
		return strconv.FormatInt(j.ReqTRES["cpu"], 10)
	},
	"NodeList": func(j *JobRecord, _ *ExportOptions) string {
		if j.NodeList == "" && j.Start.IsZero() {
			return "None assigned"
		}
		return j.NodeList
	},
	"GPUIndex": func(j *JobRecord, _ *ExportOptions) string { return FormatGPUs(j.GPUs) },
	"Reason":   func(j *JobRecord, _ *ExportOptions) string { return j.Reason },
	"Priority": func(j *JobRecord, _ *ExportOptions) string { return strconv.FormatInt(j.Priority, 10) },
	"Flags":    func(j *JobRecord, _ *ExportOptions) string { return strings.Join(j.Flags, ",") },
	"Restarts": func(j *JobRecord, _ *ExportOptions) string { return strconv.FormatUint(uint64(j.Restarts), 10) },
	"Billing":  func(j *JobRecord, _ *ExportOptions) string { return strconv.FormatInt(j.AllocTRES["billing"], 10) },
}

// JobFieldNames returns every field name JobWriter accepts, sorted.
func JobFieldNames() []string {
	names := make([]string, 0, len(jobFields)+len(usageJobFields))
	for n := range jobFields {
		names = append(names, n)
	}
	for n := range usageJobFields {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ExportOptions configure a JobWriter.
type ExportOptions struct {
	Format ExportFormat
	// Fields are sacct field names (case-insensitive; see JobFieldNames);
	// empty means DefaultJobFields.
	Fields []string
	// Location for times; nil means UTC. Times print as sacct does
	// (2006-01-02T15:04:05), "Unknown" when unset.
	Location *time.Location
	// NoHeader leaves out the header row (sacct --noheader).
	NoHeader bool
	// Now is used for the Elapsed time of running jobs.
	Now time.Time
}

// Validate checks the format and the field names.
func (o ExportOptions) Validate() error {
	_, err := o.fields()
	return err
}

// fields returns the canonical field names.
func (o ExportOptions) fields() ([]string, error) {
	if o.Format > FormatJSON {
		return nil, fmt.Errorf("%w: export format %d", ErrInvalid, o.Format)
	}
	fields := o.Fields
	if len(fields) == 0 {
		fields = DefaultJobFields()
	}
	canon := make([]string, len(fields))
	for i, f := range fields {
		found := false
		for _, n := range JobFieldNames() {
			if strings.EqualFold(n, strings.TrimSpace(f)) {
				canon[i], found = n, true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: job field %q (known: %s)", ErrInvalid, f, strings.Join(JobFieldNames(), ","))
		}
	}
	return canon, nil
}

func (o *ExportOptions) time(t time.Time) string {
	if t.IsZero() {
		return "Unknown"
	}
	loc := o.Location
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format(reportTimeLayout)
}

// JobWriter streams job records in a sacct-like format. Call Close to
// flush (and, for JSON, end the array).
type JobWriter struct {
	opt    ExportOptions
	fields []string
	bw     *bufio.Writer
	cw     *csv.Writer
	n      int
	closed bool
}

// NewJobWriter returns a writer of jobs to w. It fails on an unknown field
// name or format.
func NewJobWriter(w io.Writer, opt ExportOptions) (*JobWriter, error) {
	canon, err := opt.fields()
	if err != nil {
		return nil, err
	}
	jw := &JobWriter{opt: opt, fields: canon, bw: bufio.NewWriter(w)}
	switch opt.Format {
	case FormatCSV:
		jw.cw = csv.NewWriter(jw.bw)
		if !opt.NoHeader {
			if err := jw.cw.Write(canon); err != nil {
				return nil, err
			}
		}
	case FormatParsable, FormatParsable2:
		if !opt.NoHeader {
			if err := jw.writeSep(canon); err != nil {
				return nil, err
			}
		}
	case FormatJSON:
		if _, err := jw.bw.WriteString("["); err != nil {
			return nil, err
		}
	}
	return jw, nil
}

func (jw *JobWriter) writeSep(vals []string) error {
	s := strings.Join(vals, "|")
	if jw.opt.Format == FormatParsable {
		s += "|"
	}
	_, err := jw.bw.WriteString(s + "\n")
	return err
}

// Write writes one record.
func (jw *JobWriter) Write(j JobRecord) error {
	if jw.closed {
		return fmt.Errorf("%w: job writer closed", ErrInvalid)
	}
	if jw.opt.Format == FormatJSON {
		b, err := json.Marshal(j)
		if err != nil {
			return err
		}
		if jw.n > 0 {
			jw.bw.WriteString(",")
		}
		jw.bw.WriteString("\n")
		jw.n++
		_, err = jw.bw.Write(b)
		return err
	}
	vals := make([]string, len(jw.fields))
	for i, f := range jw.fields {
		format, ok := jobFields[f]
		if !ok {
			format = usageJobFields[f]
		}
		vals[i] = format(&j, &jw.opt)
	}
	jw.n++
	if jw.cw != nil {
		return jw.cw.Write(vals)
	}
	return jw.writeSep(vals)
}

// Close flushes the output (and closes the JSON array).
func (jw *JobWriter) Close() error {
	if jw.closed {
		return nil
	}
	jw.closed = true
	if jw.cw != nil {
		jw.cw.Flush()
		if err := jw.cw.Error(); err != nil {
			return err
		}
	}
	if jw.opt.Format == FormatJSON {
		if jw.n > 0 {
			jw.bw.WriteString("\n")
		}
		jw.bw.WriteString("]\n")
	}
	return jw.bw.Flush()
}

// FormatDuration formats d as sacct does: [D-]HH:MM:SS (MM:SS under an
// hour is still printed as 00:MM:SS), negative durations as 0.
func FormatDuration(d time.Duration) string {
	s := int64(max(d, 0) / time.Second)
	days, s := s/86400, s%86400
	h, m, sec := s/3600, (s%3600)/60, s%60
	if days > 0 {
		return fmt.Sprintf("%d-%02d:%02d:%02d", days, h, m, sec)
	}
	return fmt.Sprintf("%02d:%02d:%02d", h, m, sec)
}

// FormatTRES formats t as sacct does: canonical order, memory with a unit
// suffix (M, G, T, P) when it divides evenly ("mem=16G").
func FormatTRES(t TRES) string {
	var b strings.Builder
	for i, n := range t.Names() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n)
		b.WriteByte('=')
		v := t[n]
		if n == "mem" {
			suffix := "M"
			for _, s := range []string{"G", "T", "P"} {
				if v == 0 || v%1024 != 0 {
					break
				}
				v /= 1024
				suffix = s
			}
			b.WriteString(strconv.FormatInt(v, 10) + suffix)
			continue
		}
		b.WriteString(strconv.FormatInt(v, 10))
	}
	return b.String()
}

// FormatGPUs formats GPU indices as "node:0-3;node2:0,2".
func FormatGPUs(gs []NodeGPUs) string {
	parts := make([]string, 0, len(gs))
	for _, g := range gs {
		parts = append(parts, g.Node+":"+gres.FormatIDList(g.Indices))
	}
	return strings.Join(parts, ";")
}
