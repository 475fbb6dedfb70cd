package plugin

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	fwk "k8s.io/kube-scheduler/framework"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// probeHandle is a framework handle whose snapshot holds nodes and whose
// Filter plugins accept a node only when it is in fits (every node when
// fits is nil): what a scout's PostFilter runs on.
type probeHandle struct {
	waitingHandle
	nodes []*v1.Node
	fits  map[string]bool
}

func (p *probeHandle) SnapshotSharedLister() fwk.SharedLister {
	return internalcache.NewSnapshot(nil, p.nodes)
}

func (p *probeHandle) Parallelizer() fwk.Parallelizer { return serial{} }

// serial runs a Parallelizer's pieces one after another.
type serial struct{}

func (serial) Until(_ context.Context, pieces int, do workqueue.DoWorkPieceFunc, _ string) {
	for i := 0; i < pieces; i++ {
		do(i)
	}
}

func (p *probeHandle) RunFilterPlugins(_ context.Context, _ fwk.CycleState, _ *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	if p.fits == nil || p.fits[ni.Node().Name] {
		return nil
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "rejected by the test's Filter")
}

// TestScoutMeasurementAcrossTimeout: a scout whose scheduling cycle began
// within its timeout (PreFilter marked it a measurement) but whose
// PostFilter ran just past it had its measurement thrown away: PostFilter
// asked again whether the pod was the scout, and by then it was an
// ordinary member (and the loop, woken at the timeout, had sent the next
// pod). The shape stayed unmeasured for another scout round. A
// measurement counts when the pod was the scout as its cycle began; of
// two, the one whose cycle began later stands, whichever lands last.
func TestScoutMeasurementAcrossTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		// next: the next scout (sent at the timeout) measures before
		// the first one's late PostFilter lands, accepting only nextFits.
		next     bool
		nextFits []string
		want     []string // the shape's allowed nodes once both landed
	}{
		{name: "late measurement counts", want: []string{"n000", "n001", "n002", "n003"}},
		{name: "a later cycle's measurement stands", next: true,
			nextFits: []string{"n000", "n001", "n002"}, want: []string{"n000", "n001", "n002"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			nodes := testNodes(4)
			h.addNodes(nodes...)
			ph := &probeHandle{nodes: nodes}
			h.p.h = ph
			pods := h.groupPods(3, 8)
			h.cycle()
			if got := scoutOf(h, "ns/g"); got != "w-0" {
				t.Fatalf("scout %q sent, want w-0", got)
			}
			sent := h.now
			timeout := h.c.args.scoutTimeout()
			// w-0's scheduling cycle begins just within the timeout.
			h.now = sent.Add(timeout - 500*time.Millisecond)
			state := framework.NewCycleState()
			if _, st := h.p.PreFilter(context.Background(), state, pods[0], nil); !st.IsSuccess() {
				t.Fatalf("PreFilter of the scout within its timeout: %v", st)
			}
			// The loop wakes at the timeout and sends the next pod.
			h.now = sent.Add(timeout - time.Second)
			h.cycle() // now = sent + timeout
			if got := scoutOf(h, "ns/g"); got != "w-1" {
				t.Fatalf("scout %q after w-0's timeout, want w-1", got)
			}
			if tc.next {
				ph.fits = map[string]bool{}
				for _, n := range tc.nextFits {
					ph.fits[n] = true
				}
				h.now = h.now.Add(100 * time.Millisecond)
				st1 := framework.NewCycleState()
				if _, st := h.p.PreFilter(context.Background(), st1, pods[1], nil); !st.IsSuccess() {
					t.Fatalf("PreFilter of the next scout: %v", st)
				}
				h.p.PostFilter(context.Background(), st1, pods[1], nil)
				ph.fits = nil
			}
			// w-0's PostFilter runs past its timeout.
			h.now = h.now.Add(200 * time.Millisecond)
			h.p.PostFilter(context.Background(), state, pods[0], nil)
			h.c.mu.Lock()
			sets := maps.Clone(h.c.groups["ns/g"].allowed)
			h.c.mu.Unlock()
			if len(sets) != 1 {
				t.Fatalf("allowed sets for %d shapes, want 1 (the measurement of w-0, whose cycle began within its timeout, thrown away?)", len(sets))
			}
			var a allowedSet
			for _, a = range sets {
			}
			if !slices.Equal(a.nodes, tc.want) {
				t.Fatalf("allowed nodes %v, want %v", a.nodes, tc.want)
			}
			h.cycle()
			h.c.mu.Lock()
			g := h.c.groups["ns/g"]
			submitted, reason := g.inc != nil && len(g.inc.pods) == 3, g.reason
			h.c.mu.Unlock()
			if !submitted {
				t.Fatalf("the gang not submitted once its shape was measured: %s", reason)
			}
			checkBooks(t, h)
		})
	}
}
