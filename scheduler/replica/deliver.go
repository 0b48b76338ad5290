package replica

import (
	"time"

	"github.com/hashicorp/raft"
)

// deliverLoop hands the deliveries out while this replica leads. Each
// term it leads, it first waits for its state to hold every entry before
// the term (raft's barrier), then sends each delivery not acknowledged,
// once in the term, in index order, and every new one as it is applied.
// Losing the leadership stops it until the next term it leads.
func (r *Replica) deliverLoop() {
	defer close(r.done)
	defer close(r.deliveries)
	tick := time.NewTicker(r.poll)
	defer tick.Stop()
	var term uint64 // the term led and made ready; 0 when not leading
	sent := map[uint64]bool{}
	leads := func() bool { return r.raft.State() == raft.Leader && r.raft.CurrentTerm() == term }
	for {
		select {
		case <-r.stop:
			return
		case <-r.fsm.notify:
		case <-tick.C:
		}
		if r.raft.State() != raft.Leader {
			term = 0
			continue
		}
		if t := r.raft.CurrentTerm(); t != term {
			if err := r.wait(r.raft.Barrier(r.timeout)); err != nil {
				continue
			}
			term = t
			clear(sent)
		}
		pending := r.fsm.undelivered(sent)
	send:
		for _, d := range pending {
			for {
				if !leads() {
					break send
				}
				select {
				case <-r.stop:
					return
				case r.deliveries <- d:
					sent[d.Index] = true
					continue send
				case <-tick.C:
				}
			}
		}
		r.forgetAcked(sent)
	}
}

// forgetAcked drops from sent the indices acknowledged since.
func (r *Replica) forgetAcked(sent map[uint64]bool) {
	r.fsm.mu.Lock()
	defer r.fsm.mu.Unlock()
	held := make(map[uint64]bool, len(r.fsm.st.Undelivered))
	for _, d := range r.fsm.st.Undelivered {
		held[d.Index] = true
	}
	for i := range sent {
		if !held[i] {
			delete(sent, i)
		}
	}
}
