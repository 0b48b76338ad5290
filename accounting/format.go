package accounting

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

const reportTimeLayout = "2006-01-02T15:04:05"

func rule(w io.Writer) error {
	_, err := fmt.Fprintln(w, strings.Repeat("-", 80))
	return err
}

// WriteUtilization prints utilisation reports as sreport's "cluster
// Utilization" does, in TRES-hours with percentages of Reported.
func WriteUtilization(w io.Writer, loc *time.Location, reps ...Utilization) error {
	if loc == nil {
		loc = time.UTC
	}
	for _, u := range reps {
		if err := rule(w); err != nil {
			return err
		}
		fmt.Fprintf(w, "Cluster Utilization %s - %s\n", u.From.In(loc).Format(reportTimeLayout),
			u.To.Add(-time.Second).In(loc).Format(reportTimeLayout))
		fmt.Fprintf(w, "Usage reported in TRES Hours (%s)\n", u.TRES)
		if err := rule(w); err != nil {
			return err
		}
		tw := newTableFlags(w, tabwriter.AlignRight)
		fmt.Fprintln(tw, "Cluster\tAllocated\tDown\tPLND Down\tIdle\tPlanned\tReported\t")
		cell := func(v int64) string { return fmt.Sprintf("%s(%.2f%%)", hours(v), u.Percent(v)) }
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", u.Cluster, cell(u.Allocated), cell(u.Down),
			cell(u.PlannedDown), cell(u.Idle), cell(u.Planned), hours(u.Reported))
		if err := tw.Flush(); err != nil {
			return err
		}
		if u.OverCommitted > 0 {
			if _, err := fmt.Fprintf(w, "Over-committed (eligible jobs waiting beyond idle time): %s\n", hours(u.OverCommitted)); err != nil {
				return err
			}
		}
	}
	return nil
}

// hours formats TRES-seconds v as hours (hoursF).
func hours(v int64) string { return hoursF(float64(v) / 3600) }

// hoursF formats h hours with one decimal, as sreport prints hours.
func hoursF(h float64) string { return strconv.FormatFloat(h, 'f', 1, 64) }

// WriteAccountUsage prints AccountUsage rows as a chargeback table: one
// line per association (accounts indented by depth), its job count, the
// TRES-hours of each name in tres, and billing hours.
func WriteAccountUsage(w io.Writer, rows []UsageRow, tres ...string) error {
	if len(tres) == 0 {
		tres = []string{"cpu"}
	}
	tw := newTable(w)
	fmt.Fprint(tw, "Account\tUser\tJobs")
	for _, t := range tres {
		fmt.Fprintf(tw, "\t%s-hours", t)
	}
	fmt.Fprintln(tw, "\tbilling-hours")
	for _, r := range rows {
		acct := strings.Repeat(" ", r.Depth) + r.Key.Account
		if r.Removed {
			acct += " (removed)"
		}
		user := r.Key.User
		if r.Key.Partition != "" {
			user += "(" + r.Key.Partition + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d", acct, user, r.Jobs)
		for _, t := range tres {
			fmt.Fprintf(tw, "\t%s", hours(r.TRESSeconds[t]))
		}
		fmt.Fprintf(tw, "\t%s\n", hours(r.TRESSeconds["billing"]))
	}
	return tw.Flush()
}

// WriteTopUsers prints TopUsers results as sreport's "user TopUsage".
func WriteTopUsers(w io.Writer, users []UserUsage, tres string) error {
	if tres == "" {
		tres = "cpu"
	}
	tw := newTable(w)
	fmt.Fprintf(tw, "Rank\tUser\tAccounts\tJobs\t%s-hours\n", tres)
	for i, u := range users {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\n", i+1, u.User, strings.Join(u.Accounts, ","), u.Jobs, hours(u.TRESSeconds[tres]))
	}
	return tw.Flush()
}

// WriteShareTree prints the tree as sshare does: Account (indented by
// depth), User, RawShares, NormShares, RawUsage (decayed billing-seconds),
// NormUsage and, when factor is not nil and returns true for a row, a
// FairShare column (the priority package's fair-share factor).
func WriteShareTree(w io.Writer, root *ShareNode, factor func(Assoc) (float64, bool)) error {
	tw := newTable(w)
	header := "Account\tUser\tRawShares\tNormShares\tRawUsage\tNormUsage"
	if factor != nil {
		header += "\tFairShare"
	}
	fmt.Fprintln(tw, header)
	root.Walk(func(n *ShareNode, depth int) bool {
		acct := strings.Repeat(" ", depth) + n.Assoc.Account
		user := n.Assoc.User
		if n.Assoc.Partition != "" {
			user += "(" + n.Assoc.Partition + ")"
		}
		line := fmt.Sprintf("%s\t%s\t%d\t%.6f\t%.0f\t%.6f", acct, user, n.RawShares, n.NormShares, n.Usage.Raw, n.NormUsage)
		if factor != nil {
			line += "\t"
			if f, ok := factor(n.Assoc); ok {
				line += fmt.Sprintf("%.6f", f)
			}
		}
		fmt.Fprintln(tw, line)
		return true
	})
	return tw.Flush()
}

// table is a tabwriter whose Flush also strips trailing blanks from every
// line, so that an empty last column leaves no trailing spaces.
type table struct {
	*tabwriter.Writer
	buf bytes.Buffer
	out io.Writer
}

func newTable(w io.Writer) *table { return newTableFlags(w, 0) }

func newTableFlags(w io.Writer, flags uint) *table {
	t := &table{out: w}
	t.Writer = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', flags)
	return t
}

// Flush writes the table.
func (t *table) Flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	lines := strings.SplitAfter(t.buf.String(), "\n")
	var b strings.Builder
	for _, l := range lines {
		nl := strings.HasSuffix(l, "\n")
		b.WriteString(strings.TrimRight(l, " \n"))
		if nl {
			b.WriteByte('\n')
		}
	}
	t.buf.Reset()
	_, err := io.WriteString(t.out, b.String())
	return err
}
