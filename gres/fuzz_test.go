package gres_test

import (
	"math"
	"testing"

	"github.com/sluicehq/sluice/gres"
)

var tresSeeds = []string{
	"", "cpu=4,mem=16G,node=1,billing=10,gres/gpu=2,gres/gpu:h100=2,license/matlab=1",
	"mem=1K", "mem=1025k", "mem=1048576P", "Mem=1536M,GRES/GPU:H100=1", "gres/mps=1K", "cpu=4,,mem=1",
	"cpu=4,CPU=5", "foo=1", "gres/nic=1", "gres/gpu:v100=2,license/x=1", "mem=1.5G", "cpu=-1", "=", ",", "cpu=99999999999999999999",
}

func FuzzParseTRES(f *testing.F) {
	for _, s := range tresSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := gres.NewRegistry("gres/gpu:h100", "gres/mps", "license/matlab")
		if err != nil {
			t.Fatal(err)
		}
		v, err := r.ParseTRES(s)
		if err == nil {
			checkTRESRoundTrip(t, r, s, v)
		}
		n := r.Len()
		v, err = r.ParseTRESRegister(s)
		if err != nil {
			if r.Len() != n {
				t.Fatalf("ParseTRESRegister(%q) failed but registered names", s)
			}
			return
		}
		checkTRESRoundTrip(t, r, s, v)
	})
}

func checkTRESRoundTrip(t *testing.T, r *gres.Registry, s string, v gres.Vector) {
	t.Helper()
	for _, x := range v {
		if x < 0 || x > gres.MaxCount {
			t.Fatalf("ParseTRES(%q) = %v: count out of range", s, v)
		}
	}
	f := r.FormatTRES(v)
	back, err := r.ParseTRES(f)
	if err != nil {
		t.Fatalf("ParseTRES(FormatTRES(%q) = %q): %v", s, f, err)
	}
	if !back.Equal(v) {
		t.Fatalf("round trip of %q: %v -> %q -> %v", s, v, f, back)
	}
	if g := r.FormatTRES(back); g != f {
		t.Fatalf("canonical form of %q not stable: %q then %q", s, f, g)
	}
}

func FuzzParseGRES(f *testing.F) {
	for _, s := range []string{"", "none", "gpu", "gpu:2", "gpu:h100", "gpu:h100:2,shard:4,mps:100", "gres/gpu:h100=2",
		"gres/gpu=2", "gpu:1g.10gb:1", "mps:1K", "gpu:", "gpu::2", "gpu:2,gpu:3", "gpu:h100:2:x", "2gpu", "gpu:9999999999999P"} {
		f.Add(s)
	}
	r, err := gres.NewRegistry("gres/gpu:h100", "gres/shard", "gres/mps")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		reqs, err := gres.ParseGRES(s)
		if err != nil {
			return
		}
		for _, q := range reqs {
			if err := q.Validate(); err != nil {
				t.Fatalf("ParseGRES(%q) returned invalid request %+v: %v", s, q, err)
			}
		}
		f := gres.FormatGRES(reqs)
		back, err := gres.ParseGRES(f)
		if err != nil {
			t.Fatalf("ParseGRES(FormatGRES(%q) = %q): %v", s, f, err)
		}
		if len(back) != len(reqs) {
			t.Fatalf("round trip of %q: %v -> %q -> %v", s, reqs, f, back)
		}
		for i := range back {
			if back[i] != reqs[i] {
				t.Fatalf("round trip of %q: %v -> %q -> %v", s, reqs, f, back)
			}
		}
		if g := gres.FormatGRES(back); g != f {
			t.Fatalf("canonical form of %q not stable: %q then %q", s, f, g)
		}
		if v, err := r.RequestVector(reqs); err == nil {
			for _, x := range v {
				if x < 0 || x > gres.MaxCount {
					t.Fatalf("RequestVector(%v) = %v out of range", reqs, v)
				}
			}
		}
	})
}

func FuzzParseBillingWeights(f *testing.F) {
	for _, s := range []string{"", "CPU=1.0,Mem=0.25G,GRES/gpu=2.0", "mem=1K", "cpu=.5,license/matlab=3", "billing=1",
		"cpu=1e3", "cpu=1..2", "gres/gpu:h100=10,node=4P"} {
		f.Add(s)
	}
	r, err := gres.NewRegistry("gres/gpu:h100", "license/matlab")
	if err != nil {
		f.Fatal(err)
	}
	job := r.NewVector()
	for i := range job {
		job[i] = int64(i + 1)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := r.ParseBillingWeights(s)
		if err != nil {
			return
		}
		for _, m := range []gres.BillingMode{gres.BillingSum, gres.BillingMaxTRES, gres.BillingMaxTRESGRES} {
			if b := w.Billable(job, m); math.IsNaN(b) || b < 0 {
				t.Fatalf("weights %q mode %v: billable %v", s, m, b)
			}
			if c := w.Billing(job, m); c < 0 || c > gres.MaxCount {
				t.Fatalf("weights %q mode %v: billing %d", s, m, c)
			}
		}
		back, err := r.ParseBillingWeights(w.String())
		if err != nil {
			t.Fatalf("ParseBillingWeights(String() of %q = %q): %v", s, w.String(), err)
		}
		if back.String() != w.String() {
			t.Fatalf("weights %q: %q then %q", s, w.String(), back.String())
		}
	})
}

func FuzzParseCoreSet(f *testing.F) {
	for _, s := range []string{"", "0", "0-3,8,10-11", "3,2,1", "65535", "1-", "-1", "5-3", "0-65535"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := gres.ParseCoreSet(s)
		if err != nil {
			return
		}
		back, err := gres.ParseCoreSet(c.String())
		if err != nil || !back.Equal(c) || back.Count() != c.Count() {
			t.Fatalf("round trip of %q: %q -> %v (%v)", s, c.String(), back.String(), err)
		}
	})
}
