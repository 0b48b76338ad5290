package sim

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ErrProfileFile wraps every error about a malformed GPU workload file.
var ErrProfileFile = errors.New("sim: invalid GPU workload file")

// Profiles is a GPU workload file: the utilisation profile of each job,
// by the workload's own job ID, Job.Spec.Name (the job number of an SWF
// trace, "job<i>" for the synthetic workload).
type Profiles map[string]Profile

// profileColumns are the columns of a GPU workload file, in order.
var profileColumns = []string{"job", "util", "stall_s", "phases"}

// ReadProfiles reads a GPU workload file: CSV (RFC 4180, as
// encoding/csv reads it), lines starting with # are comments, blank
// lines are skipped. The first record is the header, the column names
// job,util[,stall_s[,phases]] (a prefix of these four, in this order);
// each further record describes one job and has at least the two first
// columns and at most the header's:
//
//   - job: the job's ID (Job.Spec.Name), not empty, each at most once;
//   - util: the job's mean GPU utilisation in percent, [0, 100] (what
//     sacct reports as TRESUsageInAve gres/gpuutil), for the whole run
//     after the stall; empty when phases are given;
//   - stall_s: a startup stall in whole seconds at 0 % (data loading),
//     [0, 4294967295]; empty or absent: none;
//   - phases: instead of util, up to MaxPhases phases "end:util"
//     separated by spaces, end the fraction of the work after the stall
//     where the phase ends (increasing, the last 1), util its percent:
//     "0.25:10 1:85" is 10 % for the first quarter, then 85 %.
//
// Fractions and percents are kept to 1/ProfileScale. For example:
//
//	# GPU workload of the KTH-SP2 trace
//	job,util,stall_s,phases
//	1,85
//	2,40,120
//	3,,600,0.5:90 1:0
//
// Errors wrap ErrProfileFile and name the line and the field.
func ReadProfiles(r io.Reader) (Profiles, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%w: no header (want %s)", ErrProfileFile, strings.Join(profileColumns[:2], ","))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProfileFile, err)
	}
	line, _ := cr.FieldPos(0)
	if len(head) < 2 || len(head) > len(profileColumns) {
		return nil, fmt.Errorf("%w: line %d: header of %d columns (want job,util[,stall_s[,phases]])", ErrProfileFile, line, len(head))
	}
	for i, h := range head {
		if !strings.EqualFold(strings.TrimSpace(h), profileColumns[i]) {
			return nil, fmt.Errorf("%w: line %d: header column %d is %q, want %q", ErrProfileFile, line, i+1, h, profileColumns[i])
		}
	}
	cols := len(head)
	out := Profiles{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrProfileFile, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) < 2 || len(rec) > cols {
			return nil, fmt.Errorf("%w: line %d: %d fields (want 2 to %d)", ErrProfileFile, line, len(rec), cols)
		}
		id, p, err := parseProfile(rec)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d, %w", ErrProfileFile, line, err)
		}
		if _, dup := out[id]; dup {
			return nil, fmt.Errorf("%w: line %d, field 1 (job): job %q given twice", ErrProfileFile, line, id)
		}
		out[id] = p
	}
}

// parseProfile parses one record of a GPU workload file; its error names
// the field.
func parseProfile(rec []string) (string, Profile, error) {
	field := func(i int) string {
		if i < len(rec) {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	bad := func(i int, format string, args ...any) error {
		return fmt.Errorf("field %d (%s): %q: %s", i+1, profileColumns[i], field(i), fmt.Sprintf(format, args...))
	}
	id := field(0)
	if id == "" {
		return "", Profile{}, bad(0, "empty job ID")
	}
	var p Profile
	if s := field(2); s != "" {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return "", Profile{}, bad(2, "want whole seconds in [0, %d]", uint32(math.MaxUint32))
		}
		p.StallSeconds = uint32(v)
	}
	util, phases := field(1), field(3)
	switch {
	case util == "" && phases == "":
		return "", Profile{}, bad(1, "neither util nor phases given")
	case util != "" && phases != "":
		return "", Profile{}, bad(1, "both util and phases given")
	case util != "":
		u, err := percent(util)
		if err != nil {
			return "", Profile{}, bad(1, "%v", err)
		}
		p.Phases[0] = PhaseOf(1, u)
	default:
		parts := strings.Fields(phases)
		if len(parts) > MaxPhases {
			return "", Profile{}, bad(3, "%d phases (at most %d)", len(parts), MaxPhases)
		}
		for i, part := range parts {
			e, u, ok := strings.Cut(part, ":")
			if !ok {
				return "", Profile{}, bad(3, "phase %d %q: want end:util", i+1, part)
			}
			end, err := strconv.ParseFloat(e, 64)
			if err != nil || !(end > 0 && end <= 1) {
				return "", Profile{}, bad(3, "phase %d %q: end %q not a fraction in (0, 1]", i+1, part, e)
			}
			pct, err := percent(u)
			if err != nil {
				return "", Profile{}, bad(3, "phase %d %q: %v", i+1, part, err)
			}
			p.Phases[i] = PhaseOf(end, pct)
		}
	}
	if err := p.Validate(); err != nil {
		col := 3
		if util != "" {
			col = 1
		}
		return "", Profile{}, bad(col, "%v", err)
	}
	return id, p, nil
}

// percent parses a utilisation in percent, [0, 100].
func percent(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= 0 && v <= 100) {
		return 0, fmt.Errorf("utilisation %q not a percent in [0, 100]", s)
	}
	return v, nil
}

// WriteProfiles writes p as a GPU workload file that ReadProfiles reads
// back to p: the full header, then one record per job in job ID order,
// every profile by its phases. Unknown (zero) profiles are left out.
func WriteProfiles(w io.Writer, p Profiles) error {
	ids := make([]string, 0, len(p))
	for id, pr := range p {
		if pr.Known() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	bw := bufio.NewWriter(w)
	bw.WriteString(strings.Join(profileColumns, ",") + "\n")
	for _, id := range ids {
		pr := p[id]
		writeID(bw, id)
		bw.WriteString(",,")
		bw.WriteString(strconv.FormatUint(uint64(pr.StallSeconds), 10))
		bw.WriteByte(',')
		for i, ph := range pr.Phases {
			if ph.End == 0 {
				break
			}
			if i > 0 {
				bw.WriteByte(' ')
			}
			bw.WriteString(strconv.FormatFloat(float64(ph.End)/ProfileScale, 'f', -1, 64))
			bw.WriteByte(':')
			bw.WriteString(strconv.FormatFloat(float64(ph.Util)/(ProfileScale/100), 'f', -1, 64))
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// writeID writes a job ID as a CSV field, quoted when it would otherwise
// not read back: with a separator, a quote or a line break in it, or a
// leading # (a comment line to the reader).
func writeID(bw *bufio.Writer, id string) {
	if !strings.ContainsAny(id, ",\"\r\n") && !strings.HasPrefix(id, "#") {
		bw.WriteString(id)
		return
	}
	bw.WriteByte('"')
	bw.WriteString(strings.ReplaceAll(id, `"`, `""`))
	bw.WriteByte('"')
}

// WithProfiles returns a Source that gives each job of src whose ID
// (Job.Spec.Name) p holds that profile, replacing any it had; the other
// jobs pass unchanged (the synthetic workload's keep their own, those of
// an SWF trace stay unmeasured).
func WithProfiles(src Source, p Profiles) *ProfileJoin { return &ProfileJoin{src: src, p: p} }

// ProfileJoin is the Source of WithProfiles.
type ProfileJoin struct {
	src           Source
	p             Profiles
	read, matched int
}

// Next returns the next job of the source, with its profile from the
// file when the file has one.
func (j *ProfileJoin) Next() (Job, bool, error) {
	job, ok, err := j.src.Next()
	if ok {
		j.read++
		if pr, found := j.p[job.Spec.Name]; found {
			job.Profile = pr
			j.matched++
		}
	}
	return job, ok, err
}

// Matched returns how many of the jobs read so far got a profile from the
// file, and how many were read.
func (j *ProfileJoin) Matched() (matched, read int) { return j.matched, j.read }
