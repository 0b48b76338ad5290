package priority

import (
	"math"
	"strconv"
	"strings"
)

// SprioRow is one line of an sprio table: a job (one per partition/QOS
// pair for multi-partition jobs) and its breakdown.
type SprioRow struct {
	// JobID is the job's ID.
	JobID uint64
	// Partition is the partition this priority is for.
	Partition string
	// User, Account and QOS appear in the long format.
	User, Account, QOS string
	// Breakdown is the job's priority breakdown; rows without one are
	// skipped.
	Breakdown *Breakdown
}

// SprioFormat selects FormatSprio's layout.
type SprioFormat struct {
	// Normalized prints normalised factors (sprio -n) instead of weighted
	// values.
	Normalized bool
	// Long prints every column (sprio -l): user, account, QOS name, nice.
	Long bool
	// Weights prints the configured weights as the first row (sprio -w).
	Weights bool
	// NoHeader omits the header line (sprio -h).
	NoHeader bool
}

type sprioCol struct {
	header string
	width  int
	right  bool
	cell   func(r *SprioRow) string // nil row: the weights row
}

// FormatSprio formats rows like sprio. Without Long only the factors with a
// non-zero weight get a column, as in sprio. Weighted values print rounded
// to integers and normalised values with seven decimals, as sprio does; the
// PRIORITY column shows Breakdown.Priority (sprio re-adds the weighted
// terms instead, which can differ in the last unit), or in normalised form
// that priority divided by 2^32−1. TRES lists "name=value" for each
// non-zero weighted TRES term.
func (e *Engine) FormatSprio(rows []SprioRow, f SprioFormat) string {
	w := e.cfg.Weights
	norm := f.Normalized
	right := !norm // sprio's default formats right-align weighted columns only
	num := func(weighted, factor float64) string {
		if norm {
			return strconv.FormatFloat(factor, 'f', 7, 64)
		}
		return strconv.FormatFloat(weighted, 'f', 0, 64)
	}
	factor := func(weight uint32, get func(b *Breakdown) (float64, float64)) func(r *SprioRow) string {
		return func(r *SprioRow) string {
			if r == nil {
				return strconv.FormatUint(uint64(weight), 10)
			}
			if r.Breakdown.Admin {
				return num(0, 0)
			}
			wv, fv := get(r.Breakdown)
			return num(wv, fv)
		}
	}
	cols := []sprioCol{
		{"JOBID", 15, true, func(r *SprioRow) string {
			if r == nil {
				return "Weights"
			}
			return strconv.FormatUint(r.JobID, 10)
		}},
		{"PARTITION", 9, false, func(r *SprioRow) string {
			if r == nil {
				return ""
			}
			return r.Partition
		}},
	}
	if f.Long {
		cols = append(cols,
			sprioCol{"USER", 8, true, func(r *SprioRow) string {
				if r == nil {
					return ""
				}
				return r.User
			}},
			sprioCol{"ACCOUNT", 8, true, func(r *SprioRow) string {
				if r == nil {
					return ""
				}
				return r.Account
			}})
	}
	cols = append(cols, sprioCol{"PRIORITY", 10, right, func(r *SprioRow) string {
		if r == nil {
			return ""
		}
		if norm {
			return strconv.FormatFloat(float64(r.Breakdown.Priority)/math.MaxUint32, 'f', 14, 64)
		}
		return strconv.FormatUint(uint64(r.Breakdown.Priority), 10)
	}})
	if !norm {
		cols = append(cols, sprioCol{"SITE", 10, true, func(r *SprioRow) string {
			if r == nil {
				return "1"
			}
			if r.Breakdown.Admin {
				return "0"
			}
			return strconv.FormatInt(r.Breakdown.Site, 10)
		}})
	}
	add := func(weight uint32, header string, get func(b *Breakdown) (float64, float64)) {
		if f.Long || weight != 0 {
			cols = append(cols, sprioCol{header, 10, right, factor(weight, get)})
		}
	}
	add(w.Age, "AGE", func(b *Breakdown) (float64, float64) { return b.Weighted.Age, b.Factors.Age })
	add(w.Assoc, "ASSOC", func(b *Breakdown) (float64, float64) { return b.Weighted.Assoc, b.Factors.Assoc })
	add(w.FairShare, "FAIRSHARE", func(b *Breakdown) (float64, float64) { return b.Weighted.FairShare, b.Factors.FairShare })
	add(w.JobSize, "JOBSIZE", func(b *Breakdown) (float64, float64) { return b.Weighted.JobSize, b.Factors.JobSize })
	add(w.Partition, "PARTITION", func(b *Breakdown) (float64, float64) { return b.Weighted.Partition, b.Factors.Partition })
	if f.Long {
		cols = append(cols, sprioCol{"QOSNAME", 10, right, func(r *SprioRow) string {
			if r == nil {
				return ""
			}
			return r.QOS
		}})
	}
	add(w.QOS, "QOS", func(b *Breakdown) (float64, float64) { return b.Weighted.QOS, b.Factors.QOS })
	if f.Long && !norm {
		cols = append(cols, sprioCol{"NICE", 11, true, func(r *SprioRow) string {
			if r == nil {
				return ""
			}
			if r.Breakdown.Admin {
				return "0"
			}
			return strconv.FormatInt(r.Breakdown.Nice, 10)
		}})
	}
	if f.Long || len(e.tres) > 0 {
		cols = append(cols, sprioCol{"TRES", 20, right, func(r *SprioRow) string {
			if r == nil {
				return e.tresWeightString()
			}
			if r.Breakdown.Admin {
				return ""
			}
			var s strings.Builder
			for _, t := range r.Breakdown.TRES {
				if t.Weighted == 0 {
					continue
				}
				if s.Len() > 0 {
					s.WriteByte(',')
				}
				s.WriteString(e.cfg.Registry.Name(t.ID))
				s.WriteByte('=')
				if norm {
					s.WriteString(strconv.FormatFloat(t.Factor, 'f', 2, 64))
				} else {
					s.WriteString(strconv.FormatFloat(t.Weighted, 'f', 0, 64))
				}
			}
			return s.String()
		}})
	}

	var b, line strings.Builder
	emit := func(get func(c *sprioCol) string) {
		for i := range cols {
			if i > 0 {
				line.WriteByte(' ')
			}
			line.WriteString(sprioCell(get(&cols[i]), cols[i].width, cols[i].right))
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
		line.Reset()
	}
	if !f.NoHeader {
		emit(func(c *sprioCol) string { return c.header })
	}
	if f.Weights {
		emit(func(c *sprioCol) string { return c.cell(nil) })
	}
	for i := range rows {
		r := &rows[i]
		if r.Breakdown == nil {
			continue
		}
		emit(func(c *sprioCol) string { return c.cell(r) })
	}
	return b.String()
}

// tresWeightString lists the configured non-zero TRES weights.
func (e *Engine) tresWeightString() string {
	var s strings.Builder
	for i, t := range e.tres {
		if i > 0 {
			s.WriteByte(',')
		}
		s.WriteString(e.cfg.Registry.Name(t.id))
		s.WriteByte('=')
		s.WriteString(strconv.FormatFloat(t.w, 'g', -1, 64))
	}
	return s.String()
}

// sprioCell cuts s to width and pads it, as sprio's _print_str does.
func sprioCell(s string, width int, right bool) string {
	if len(s) > width {
		s = s[:width]
	}
	pad := strings.Repeat(" ", width-len(s))
	if right {
		return pad + s
	}
	return s + pad
}
