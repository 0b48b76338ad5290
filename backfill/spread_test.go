package backfill

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/stretchr/testify/require"
)

// gpuNodes is a cluster of 8-CPU nodes with the given GPU counts.
func gpuNodes(gpus ...int64) []NodeState {
	nodes := make([]NodeState, len(gpus))
	for i, g := range gpus {
		nodes[i].Capacity = vec(8, 64, g)
	}
	return nodes
}

// gpusFree sums the free GPUs of every node at t.
func gpusFree(t *testing.T, p *Profile, at time.Time) int64 { t.Helper(); return freeSum(t, p, at, 5) }

// freeSum sums TRES id's free amount over every node at t.
func freeSum(t *testing.T, p *Profile, at time.Time, id int) int64 {
	t.Helper()
	var n int64
	for i := range p.NumNodes() {
		f, err := p.FreeAt(i, at)
		require.NoError(t, err)
		n += f.At(gres.ID(id))
	}
	return n
}

// -N4 --gpus=8 on nodes with 5, 1, 1 and 1 GPUs: one per node plus a
// Spread of 4 fits (Slurm distributes --gpus over the nodes as they can
// hold it), and the booking holds exactly 8 GPUs, 5 on the first node.
func TestSpreadRequestFitsUnevenNodes(t *testing.T) {
	p, err := NewProfile(t0, gpuNodes(5, 1, 1, 1), nil, ProfileOptions{})
	require.NoError(t, err)
	req := Request{Nodes: 4, PerNode: vec(1, 0, 1), Spread: vec(0, 0, 4), Duration: mins(10)}
	fit, err := p.EarliestFit(req)
	require.NoError(t, err)
	require.Equal(t, FitFound, fit.Status)
	require.Equal(t, t0, fit.Start)
	require.Equal(t, []int{0, 1, 2, 3}, fit.Nodes)
	require.Len(t, fit.Spread, 4)
	require.Equal(t, int64(4), fit.Spread[0].At(5))
	require.NoError(t, p.ReserveFit(1, req, fit))
	require.Zero(t, gpusFree(t, p, t0), "the booking holds all 8 GPUs")

	// A Spread no four of the nodes can hold never fits.
	fit, err = p.EarliestFit(Request{Nodes: 4, PerNode: vec(1, 0, 1), Spread: vec(0, 0, 5), Duration: mins(10)})
	require.NoError(t, err)
	require.Equal(t, FitNever, fit.Status)
}

// A Spread job waits for the node that can hold its share: node 0 is
// busy with 4 GPUs until 10 min 17 s, so -N4 --gpus=8 is reserved to
// start exactly then, booking 8 GPUs, while a later one-node job still
// starts now on a node the reservation leaves free.
func TestPlanSpreadJobReservedAtExactEnd(t *testing.T) {
	nodes := gpuNodes(5, 1, 1, 1, 1)
	end := t0.Add(10*time.Minute + 17*time.Second)
	run := []Running{{ID: 100, End: end, Allocs: []Alloc{{Node: 0, Use: vec(1, 0, 4)}}}}
	pl, err := NewPlanner(Config{Mode: EASY, Window: 24 * time.Hour})
	require.NoError(t, err)
	p, err := pl.NewProfile(t0, nodes, run)
	require.NoError(t, err)
	plan, err := pl.Plan(p, []Job{
		{ID: 1, Nodes: 4, PerNode: vec(1, 0, 1), Spread: vec(0, 0, 4), TimeLimit: mins(30)},
		{ID: 2, Nodes: 1, PerNode: vec(1, 0, 1), TimeLimit: mins(60)},
	})
	require.NoError(t, err)
	e := entryByID(plan, 1)
	require.Equal(t, StatusReserved, e.Status)
	require.Equal(t, end, e.Start)
	require.Contains(t, e.Nodes, 0)
	var total int64
	for _, s := range e.Spread {
		total += s.At(5)
	}
	require.Equal(t, int64(4), total)
	require.Zero(t, gpusFree(t, p, end.Add(time.Second)), "9 GPUs: 8 for the Spread job, 1 for job 2")
	e2 := entryByID(plan, 2)
	require.Equal(t, StatusStart, e2.Status)
}

// simWorkloadSpread is simWorkload where some multi-node GPU jobs ask
// for a GPU total beyond one per node (a Spread) instead.
func simWorkloadSpread(rng *rand.Rand, res int64) ([]NodeState, []simJob) {
	nodes, jobs := simWorkload(rng, res)
	for x := range jobs {
		j := &jobs[x].Job
		if j.Nodes < 2 || j.Exclusive || rng.IntN(2) == 0 {
			continue
		}
		j.PerNode = vec(j.PerNode.At(gres.CPU), j.PerNode.At(gres.Mem), 1)
		var room int64 // what the job's Nodes best nodes hold beyond one GPU each
		var caps []int64
		for i := range nodes {
			if j.Allowed.Has(i) && j.PerNode.Fits(nodes[i].Capacity) {
				caps = append(caps, nodes[i].Capacity.At(5)-1)
			}
		}
		if len(caps) < j.Nodes {
			j.PerNode = vec(j.PerNode.At(gres.CPU), j.PerNode.At(gres.Mem), 0)
			continue
		}
		for k := 0; k < j.Nodes; k++ { // the largest first
			b := k
			for m := k + 1; m < len(caps); m++ {
				if caps[m] > caps[b] {
					b = m
				}
			}
			caps[k], caps[b] = caps[b], caps[k]
			room += caps[k]
		}
		if room > 0 {
			j.Spread = vec(0, 0, 1+rng.Int64N(room))
		}
	}
	return nodes, jobs
}

// TestBackfillGuaranteeSpread is TestBackfillGuarantee's EASY property
// with Spread jobs among the others: no job that held a reservation
// starts later than it, whatever starts behind it, and the shares of
// every start hold exactly its Spread without over-allocating a node.
func TestBackfillGuaranteeSpread(t *testing.T) {
	iters := 800
	if testing.Short() {
		iters = 150
	}
	cfgs := []Config{
		{Mode: EASY, Window: 30 * 24 * time.Hour},
		{Mode: EASY, Reservations: 2, Window: 30 * 24 * time.Hour},
		{Mode: EASY, Window: 30 * 24 * time.Hour, BusyNodes: true},
		{Window: 30 * 24 * time.Hour, Resolution: time.Second},
	}
	spreadJobs, held := 0, 0
	forEachSim(t, iters, 515, cfgs, simWorkloadSpread, func(seed int, cfg Config, jobs []simJob, actual map[JobID]int64, given map[JobID][]givenResv, first map[JobID]int64) {
		for _, j := range jobs {
			a := actual[j.ID]
			if j.Spread != nil {
				spreadJobs++
			}
			for _, g := range given[j.ID] {
				require.LessOrEqual(t, a, g.start, "seed %d %v: job %d started after its reservation (given at %d)", seed, cfg.Mode, j.ID, g.at)
				if j.Spread != nil {
					held++
				}
			}
			if cfg.Mode == Conservative {
				f, ok := first[j.ID]
				require.True(t, ok, "seed %d: job %d got a start time when first planned", seed, j.ID)
				require.LessOrEqual(t, a, f, "seed %d: job %d started after the first start it was given", seed, j.ID)
			}
		}
	})
	require.Positive(t, spreadJobs)
	require.Positive(t, held, "some Spread jobs held reservations")
	t.Logf("%d Spread jobs, %d of their reservations held", spreadJobs, held)
}

// naiveSpread is the reference earliest fit of n nodes each holding req
// over the interval, whose spare on dimension dim (lowest free beyond
// req) the n best of them sum to at least spread.
func naiveSpread(m *naive, n int, req []int64, dim int, spread, d int64) (int64, FitStatus) {
	for _, t := range append([]int64{m.origin}, m.times(m.origin+1)...) {
		end := m.endAt(t, d)
		var spare []int64
		for i := range m.caps {
			if !okVec(m.caps[i], req) || !m.fitsInterval(i, req, t, end) {
				continue
			}
			low := int64(posInf)
			for _, tt := range append([]int64{t}, m.times(t+1)...) {
				if tt >= end {
					break
				}
				low = min(low, m.free(i, tt)[dim]-req[dim])
			}
			spare = append(spare, max(low, 0))
		}
		if len(spare) < n {
			continue
		}
		slices.SortFunc(spare, func(x, y int64) int { return int(y - x) })
		var sum int64
		for _, s := range spare[:n] {
			sum += s
		}
		if sum >= spread {
			return t, FitFound
		}
	}
	return 0, FitNever
}

// TestSpreadMatchesModel compares Spread searches on random profiles with
// the reference model: the same earliest start (the sweep retries where a
// candidate's spare grows), shares that hold exactly the Spread within
// each node's spare, and bookings the model agrees fit.
func TestSpreadMatchesModel(t *testing.T) {
	forEachRandomProfile(t, 300, 60, 515, func(t *testing.T, rng *rand.Rand, p *Profile, m *naive) {
		if p.a == 0 {
			return // no resource to spread
		}
		nextID := JobID(5000)
		for step := range 30 {
			if rng.IntN(3) == 0 {
				p = runOps(t, rng, p, m, 1, &nextID)
			}
			n := 1 + rng.IntN(p.n)
			req := make([]int64, p.a)
			for j := range req {
				req[j] = int64(rng.IntN(2))
			}
			dim := rng.IntN(p.a)
			spread := make([]int64, p.a)
			spread[dim] = 1 + rng.Int64N(6)
			d := 1 + rng.Int64N(6*m.res)
			r := Request{Nodes: n, PerNode: expandTo(p, req), Spread: expandTo(p, spread), Duration: time.Duration(d) * time.Second}
			fit, err := p.EarliestFit(r)
			require.NoError(t, err)
			wt, ws := naiveSpread(m, n, req, dim, spread[dim], d)
			require.Equal(t, ws, fit.Status, "step %d (n=%d req=%v spread=%v d=%d)", step, n, req, spread, d)
			if ws != FitFound {
				continue
			}
			require.Equal(t, wt, fit.Start.Unix(), "step %d start (n=%d req=%v spread=%v d=%d)", step, n, req, spread, d)
			require.Len(t, fit.Spread, n)
			end := fit.End.Unix()
			var sum int64
			for x, i := range fit.Nodes {
				u := slices.Clone(req)
				for j := range u {
					u[j] += fit.Spread[x].At(p.active[j])
				}
				sum += u[dim] - req[dim]
				require.True(t, m.fitsInterval(i, u, wt, end), "step %d: node %d cannot hold its share", step, i)
				nextID++
				m.items = append(m.items, naiveItem{id: nextID, kind: kindReserved, node: i, use: u, s: wt, e: end})
				require.NoError(t, p.Reserve(Reservation{ID: nextID, Start: fit.Start, End: fit.End, Allocs: []Alloc{{Node: i, Use: expandTo(p, u)}}}))
			}
			require.Equal(t, spread[dim], sum, "step %d: the shares hold exactly the Spread", step)
			checkProfile(t, p, m)
		}
	})
}
