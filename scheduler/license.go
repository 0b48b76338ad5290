package scheduler

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
)

// License is a count of one cluster-wide license: in Config.Licenses the
// cluster's pool (slurm.conf Licenses=matlab:10), in JobSpec.Licenses what
// a job holds while it runs (sbatch -L matlab:2). Its text form is
// Slurm's, name[:count] ("matlab:2"; "matlab" is a count of 1).
type License struct {
	Name  string
	Count int64
}

// String returns Slurm's form, "matlab:2".
func (l License) String() string { return l.Name + ":" + strconv.FormatInt(l.Count, 10) }

// MarshalText writes String.
func (l License) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText reads one name[:count].
func (l *License) UnmarshalText(b []byte) error {
	x, err := parseLicense(string(b))
	if err != nil {
		return err
	}
	*l = x
	return nil
}

// ParseLicenses reads Slurm's license list, as sbatch -L/--licenses and
// slurm.conf's Licenses write it: comma-separated name[:count], a count of
// 1 when omitted ("matlab:2,ansys" is matlab 2 and ansys 1). Names use
// letters, digits, '_', '-' and '.' (a TRES license/<name>); each appears
// once. Remote licenses (name@server) and alternatives separated by '|'
// are not supported and are refused with an error that says so. The empty
// string is no license. Errors wrap ErrInvalidJob.
func ParseLicenses(s string) ([]License, error) {
	if s == "" {
		return nil, nil
	}
	if strings.Contains(s, "|") {
		return nil, fmt.Errorf("%w: licenses %q: alternatives ('|') are not supported; list the licenses the job needs, comma-separated", ErrInvalidJob, s)
	}
	var out []License
	for part := range strings.SplitSeq(s, ",") {
		l, err := parseLicense(part)
		if err != nil {
			return nil, err
		}
		for _, x := range out {
			if x.Name == l.Name {
				return nil, fmt.Errorf("%w: licenses %q: %q appears twice", ErrInvalidJob, s, l.Name)
			}
		}
		out = append(out, l)
	}
	return out, nil
}

// FormatLicenses writes ls as ParseLicenses reads it ("matlab:2,ansys:1").
func FormatLicenses(ls []License) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.String()
	}
	return strings.Join(parts, ",")
}

func parseLicense(s string) (License, error) {
	name, count, counted := strings.Cut(s, ":")
	if strings.Contains(name, "@") {
		return License{}, fmt.Errorf("%w: license %q: remote licenses (name@server) are not supported", ErrInvalidJob, s)
	}
	if !validLicenseName(name) {
		return License{}, fmt.Errorf("%w: license %q: bad name %q (letters, digits, '_', '-', '.', at most 64)", ErrInvalidJob, s, name)
	}
	l := License{Name: name, Count: 1}
	if counted {
		n, err := strconv.ParseInt(count, 10, 64)
		if err != nil || n < 0 || n > gres.MaxCount || count != strconv.FormatInt(n, 10) {
			return License{}, fmt.Errorf("%w: license %q: count %q, want a whole number in [0, %d]", ErrInvalidJob, s, count, gres.MaxCount)
		}
		l.Count = n
	}
	return l, nil
}

// licenses is the cluster's license pool: per license (in Config order)
// its name, total, TRES and the count running jobs hold.
type licenses struct {
	names  []string
	total  []int64
	tres   []gres.ID
	byName map[string]int
}

// newLicenses validates the configured licenses and registers their TRES.
func newLicenses(reg *gres.Registry, ls []License) (licenses, error) {
	l := licenses{byName: make(map[string]int, len(ls))}
	for _, x := range ls {
		if !validLicenseName(x.Name) {
			return licenses{}, fmt.Errorf("%w: Licenses: bad name %q (letters, digits, '_', '-', '.', at most 64)", ErrInvalidConfig, x.Name)
		}
		if _, dup := l.byName[x.Name]; dup {
			return licenses{}, fmt.Errorf("%w: Licenses: %q appears twice", ErrInvalidConfig, x.Name)
		}
		if x.Count < 0 || x.Count > gres.MaxCount {
			return licenses{}, fmt.Errorf("%w: Licenses: %q count %d, want [0, %d]", ErrInvalidConfig, x.Name, x.Count, gres.MaxCount)
		}
		id, err := reg.Register("license/" + x.Name)
		if err != nil {
			return licenses{}, fmt.Errorf("%w: Licenses: %w", ErrInvalidConfig, err)
		}
		l.byName[x.Name] = len(l.names)
		l.names, l.total, l.tres = append(l.names, x.Name), append(l.total, x.Count), append(l.tres, id)
	}
	return l, nil
}

// checkLicenseRequest validates a job's licenses at submission: each one
// configured and no more than the cluster has (Slurm refuses such a job:
// it could never run).
func (s *Scheduler) checkLicenseRequest(ls []License) error {
	for i, x := range ls {
		if x.Count < 1 || x.Count > gres.MaxCount {
			return fmt.Errorf("%w: Licenses: %q count %d, want [1, %d]", ErrInvalidJob, x.Name, x.Count, gres.MaxCount)
		}
		k, ok := s.lic.byName[x.Name]
		if !ok {
			return fmt.Errorf("%w: Licenses: unknown license %q (Config.Licenses)", ErrInvalidJob, x.Name)
		}
		if x.Count > s.lic.total[k] {
			return fmt.Errorf("%w: Licenses: %q count %d, the cluster has %d", ErrInvalidJob, x.Name, x.Count, s.lic.total[k])
		}
		for _, y := range ls[:i] {
			if y.Name == x.Name {
				return fmt.Errorf("%w: Licenses: %q appears twice", ErrInvalidJob, x.Name)
			}
		}
	}
	return nil
}

// licenseUse returns what the running jobs hold of each license.
func (s *Scheduler) licenseUse() []int64 {
	used := make([]int64, len(s.lic.names))
	if len(used) == 0 {
		return used
	}
	s.running.Ascend(func(j *job) bool {
		for _, x := range j.Spec.Licenses {
			if k, ok := s.lic.byName[x.Name]; ok {
				used[k] += x.Count
			}
		}
		return true
	})
	return used
}

// addLicenseTRES adds the job's licenses to a TRES vector (a copy when
// the job has any), as license/<name> counts.
func (s *Scheduler) addLicenseTRES(j *job, v gres.Vector) gres.Vector {
	if len(j.Spec.Licenses) == 0 {
		return v
	}
	out := make(gres.Vector, max(len(v), s.reg.Len()))
	copy(out, v)
	for _, x := range j.Spec.Licenses {
		if k, ok := s.lic.byName[x.Name]; ok {
			out[s.lic.tres[k]] += x.Count
		}
	}
	return out
}

// validLicenseName reports whether name is a license name, as the TRES
// registry accepts it in license/<name>.
func validLicenseName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.':
		default:
			return false
		}
	}
	return true
}

// licensesFree reports whether the licenses job j asks for are free now.
func (s *Scheduler) licensesFree(j *job) bool {
	if len(j.Spec.Licenses) == 0 {
		return true
	}
	used := s.licenseUse()
	for _, x := range j.Spec.Licenses {
		if k, ok := s.lic.byName[x.Name]; ok && used[k]+x.Count > s.lic.total[k] {
			return false
		}
	}
	return true
}

// holdForLicenses makes a job waiting for licenses hold back its
// partition in the main pass when backfill plans it (see holdForLimit).
func (s *Scheduler) holdForLicenses(j *job, blocked *passBlocks, magnetic bool) {
	if s.bf == nil || magnetic || j.Spec.Reservation != "" {
		return
	}
	blocked.parts[j.part] = true
	s.avail.Subtract(s.parts[j.part].nodes)
}

// licenseSlot describes license k as a counter of the backfill plan.
func (s *Scheduler) licenseSlot(k int) policy.Slot {
	return policy.Slot{Limit: s.lic.total[k], Blocker: policy.Blocker{Holder: "cluster",
		Constraint: policy.Constraint{Reason: policy.ReasonLicenses, Limit: "Licenses", TRES: "license/" + s.lic.names[k], Value: s.lic.total[k]}}}
}

// config returns the pool as Config.Licenses (nil for none).
func (l *licenses) config() []License {
	var out []License
	for k, n := range l.names {
		out = append(out, License{Name: n, Count: l.total[k]})
	}
	return out
}
