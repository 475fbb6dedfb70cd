package backfill

import (
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
)

// TestHeldStartAfterKeptHold: A's hold (two nodes, estimated start at
// t+1h) is kept in the walk, then G, held below it on a third node,
// starts there when x, the job on it, is cancelled. A's searches saw G's
// node held for good; after the start it runs G. Without a limit, G is
// estimated to end at t+1h10m, after A's estimated start: a second cycle
// at the same time would search the same, so the start asks for no cycle
// at once (startOnHeld; before, every such start did: a third of the
// at-once cycles of TestHoldRepeatProperty's workloads that changed
// nothing). With a limit, G's end may open a planned start, and the
// cycle at once stays. Either way a second cycle at the same time
// decides and tells as the first.
func TestHeldStartAfterKeptHold(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limit  time.Duration // G's
		atOnce bool
	}{
		{"no limit", 0, false},
		{"limit", 2 * time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, e := holdSceneEngine(t, HoldConfig{MinGPUs: 8, MaxShare: 1, Budget: 10 * time.Hour, Hysteresis: 10 * time.Minute, MaxHolds: 2}, "a", "b")
			submit := func(id, account string, nodes int, limit, at time.Duration) {
				t.Helper()
				j := Job{ID: id, Account: account, TimeLimit: limit,
					Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(nodes, 8)}}}}
				if err := e.Submit(j, epoch.Add(at)); err != nil {
					t.Fatal(err)
				}
			}
			for _, id := range []string{"p", "q", "x", "y"} {
				submit(id, "b", 1, 0, 0)
			}
			if p := scheduleStarted(t, e, epoch); len(p.Starts) != 4 {
				t.Fatalf("the four jobs of b did not all start:\n%s", p.Describe(c, epoch))
			}
			submit("A", "a", 2, 0, time.Minute)
			submit("G", "a", 1, tc.limit, time.Minute)
			p := scheduleStarted(t, e, epoch.Add(time.Minute))
			if got := holdNodes(p); got != "A node[00000-00001], G node00002" {
				t.Fatalf("holds %q, want A on node[00000-00001] and G on node00002 (x's node):\n%s", got, p.Describe(c, epoch))
			}
			now := epoch.Add(10 * time.Minute)
			if err := e.Cancel("x", now); err != nil {
				t.Fatal(err)
			}
			first := scheduleStarted(t, e, now)
			if len(first.Starts) != 1 || first.Starts[0].Job != "G" || holdNodes(first) != "A node[00000-00001]" {
				t.Fatalf("want G started and A's hold kept:\n%s", first.Describe(c, epoch))
			}
			next, ok := e.NextEvent()
			if atOnce := ok && next.Equal(now.Add(time.Nanosecond)); atOnce != tc.atOnce {
				t.Errorf("NextEvent %v, %v: a cycle at once %v, want %v", next.Sub(epoch), ok, atOnce, tc.atOnce)
			}
			for i := 0; ok && next.Equal(now.Add(time.Nanosecond)); i++ {
				if i == 5 {
					t.Fatalf("NextEvent still at once after %d cycles", i+1)
				}
				first = scheduleStarted(t, e, now)
				next, ok = e.NextEvent()
			}
			second := scheduleStarted(t, e, now)
			if diff := planChanges(first, second, false); len(diff) > 0 {
				t.Errorf("a second cycle at the same time changed %v\nthe first:\n%s\nthe second:\n%s", diff, first.Describe(c, epoch), second.Describe(c, epoch))
			}
		})
	}
}

// holdNodes lists p's holds as "job nodes", comma-separated, in the
// plan's order.
func holdNodes(p *Plan) string {
	s := ""
	for i, h := range p.Holds {
		if i > 0 {
			s += ", "
		}
		s += h.Job + " " + h.Nodes
	}
	return s
}
