package swf_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
	"github.com/sluicehq/sluice/scheduler/sim/swf"
)

// Replay a small SWF trace: read its header, build the machine's
// cluster, stream the cleaned jobs through the simulator and write the
// result back as SWF with wait and run times filled in.
func Example() {
	trace := `; MaxProcs: 4
; UnixStartTime: 843480031
1  0 -1 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1
2 10 -1  50 2 -1 -1 2  60 -1 1 2 1 -1 -1 -1 -1 -1
3 15 -1   0 1 -1 -1 1  60 -1 1 2 1 -1 -1 -1 -1 -1
4 20 -1  30 1 -1 -1 1  -1 -1 1 3 1 -1 -1 -1 -1 -1
`
	rd, err := swf.NewReader(strings.NewReader(trace), swf.Options{})
	if err != nil {
		panic(err)
	}
	m, err := swf.MachineFor(rd.Header(), 0, 1)
	if err != nil {
		panic(err)
	}
	cfg, err := m.Config()
	if err != nil {
		panic(err)
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		panic(err)
	}
	res, err := sim.Run(s, swf.Source(rd, m), sim.Options{})
	if err != nil {
		panic(err)
	}
	st := rd.Stats()
	fmt.Printf("%d jobs kept, %d dropped: %v\n", st.Jobs, st.Dropped(), st.Issues[0])
	w := swf.NewWriter(os.Stdout, m.Start)
	for _, r := range res.Jobs {
		if err := w.WriteResult(r); err != nil {
			panic(err)
		}
	}
	if err := w.Flush(); err != nil {
		panic(err)
	}
	// Output:
	// 3 jobs kept, 1 dropped: swf: line 5: field 4 (run time) "0": run time unknown or not positive
	// 1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1
	// 4 20 80 30 1 -1 -1 1 30 -1 1 3 1 -1 -1 -1 -1 -1
	// 2 10 90 50 2 -1 -1 2 60 -1 1 2 1 -1 -1 -1 -1 -1
}
