package plugin

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// podState is what the plugin keeps of one pod of a group.
type podState struct {
	uid, name, ns string
	rank          int
	shape         string
	gpus          int
	node          string // spec.nodeName once bound
	pod           *v1.Pod
	// orphan marks a pod whose gang was torn down while its bind was in
	// flight (it had passed Permit): if the bind succeeds after all, the
	// pod is deleted (no part of a torn-down gang runs); if it fails, the
	// pod is pending again. An orphan joins no new gang meanwhile.
	orphan bool
	// evicting marks a bound pod whose deletion the plugin asked for;
	// evictFails counts the times the API server refused it.
	evicting   bool
	evictFails int
}

// allowedSet is the nodes where the profile's other Filter plugins accept a
// pod of one shape, as measured by a scout pod's scheduling cycle.
type allowedSet struct {
	nodes []string
	at    time.Time
	// missed is the GPU nodes the plugin knew that the scheduler's
	// snapshot lacked when the scout measured (scouted).
	missed []string
	// changed is when the latest node change that could affect the shape
	// was seen (remeasure): a measurement from a scheduling cycle that
	// began before it was taken on a snapshot without the change and does
	// not count (scouted). Zero when no node changed.
	changed time.Time
}

// groupState is one pod group: its live pods, its minimum and, while the
// engine holds a job for it, its incarnation.
type groupState struct {
	key, ns    string
	minMember  int // 0 while unknown
	pods       map[string]*podState
	submit     time.Time // the earliest creation time of its pods
	gen        int
	inc        *incarnation
	allowed    map[string]allowedSet
	scout      map[string]string    // shape -> UID of the pod scouting it
	scoutSince map[string]time.Time // shape -> when the scout was sent
	reason     string               // why its pods wait, for their condition
	neverFits  bool
	retry      time.Time // when a gang that never fits is tried again
	// seenWhole is set while the group has bound pods once this replica
	// saw at least minMember of them bound without a job (runningUnowned:
	// adopted or not), or, at its first active cycle, bound pods and no
	// pending pod (lostPods: a running gang that lost a pod): a running
	// gang, never a partial one to delete (settlePartials), even when it
	// is half-bound later (an Indexed Job creating its next index as a pod
	// completes, a replacement for the lost pod).
	seenWhole bool
}

// dropScout forgets pod uid as the scout of its shape: it was deleted,
// moved to another group, or the scheduler will not try it any more
// (gated, or being deleted), so its measurement will not come. The next
// cycle sends another pod of the shape if the group still needs one
// (needScouts), and the loop does not wake at the scout timeout for it.
func (g *groupState) dropScout(uid string) {
	for shape, scout := range g.scout {
		if scout == uid {
			delete(g.scout, shape)
			delete(g.scoutSince, shape)
		}
	}
}

// isScout reports whether pod uid is the scout of shape at now: sent less
// than timeout (Args.scoutTimeout) ago. A scout past its timeout measures
// nothing any more: the framework holds it as an ordinary pod of its
// group (lookup), and needScouts sends another pod of its shape if the
// group still needs it measured.
func (g *groupState) isScout(uid, shape string, now time.Time, timeout time.Duration) bool {
	return uid != "" && g.scout[shape] == uid && now.Sub(g.scoutSince[shape]) < timeout
}

// dropExpiredScouts forgets the scouts past their timeout at now that
// needScouts did not replace (the group no longer asks for their shape:
// below its minimum, its gang admitted), so the map holds only scouts in
// flight.
func (g *groupState) dropExpiredScouts(now time.Time, timeout time.Duration) {
	for shape, uid := range g.scout {
		if !g.isScout(uid, shape, now, timeout) {
			delete(g.scout, shape)
			delete(g.scoutSince, shape)
		}
	}
}

// incarnation is one engine job for a group: the pods it was submitted
// with, where the engine put them and how far binding got.
type incarnation struct {
	job      string
	pods     map[string]*podState // by UID
	shapes   map[string][]string  // shape -> UIDs, the gang's members
	allowed  map[string][]string  // shape -> the allowed nodes submitted
	admitted bool
	running  bool
	// adopted is set on a gang found running without a job and entered
	// into the engine as it ran (adoptRunning), not submitted.
	adopted  bool
	slots    map[string]string // UID -> node
	ranks    map[string]int    // UID -> the pod's rank in its member (gang.Pod.Rank)
	replace  map[string]bool   // pods whose bind failed, to be moved by the engine
	reserved map[string]bool
	passed   map[string]bool // allowed through Permit, not yet bound
	bound    map[string]bool
	gone     map[string]bool
	failures map[string]int // bind failures per pod
	broken   string         // why the gang must be torn down ("" when healthy)
}

func newIncarnation(job string) *incarnation {
	return &incarnation{job: job, pods: map[string]*podState{}, shapes: map[string][]string{},
		allowed: map[string][]string{}, slots: map[string]string{}, ranks: map[string]int{},
		replace: map[string]bool{}, reserved: map[string]bool{},
		passed: map[string]bool{}, bound: map[string]bool{}, gone: map[string]bool{}, failures: map[string]int{}}
}

// ready reports whether every pod of the gang is reserved, through Permit or
// bound: the gang may go to binding.
func (inc *incarnation) ready() bool {
	for uid := range inc.pods {
		if !inc.reserved[uid] && !inc.passed[uid] && !inc.bound[uid] {
			return false
		}
	}
	return true
}

// allBound reports whether every pod of the gang is bound.
func (inc *incarnation) allBound() bool {
	for uid := range inc.pods {
		if !inc.bound[uid] {
			return false
		}
	}
	return true
}

// allGone reports whether every pod of the gang is deleted or terminated.
func (inc *incarnation) allGone() bool {
	for uid := range inc.pods {
		if !inc.gone[uid] {
			return false
		}
	}
	return true
}

// boundCount counts the gang's pods that are bound and not gone.
func (inc *incarnation) boundCount() int {
	n := 0
	for uid := range inc.bound {
		if !inc.gone[uid] {
			n++
		}
	}
	return n
}

// pending returns the group's live pods that are not bound and that the
// scheduler may try (schedulable): the pods a gang is made of.
func (g *groupState) pending() []*podState {
	var out []*podState
	for _, p := range g.pods {
		if p.pending() {
			out = append(out, p)
		}
	}
	orderPods(out)
	return out
}

// pending reports whether the pod is one a gang is made of: not bound, not
// an orphan, and schedulable (no scheduling gate, not being deleted).
// groupState.pending and halfBound both count pods with it.
func (p *podState) pending() bool { return p.node == "" && !p.orphan && p.schedulable() }

// terminating reports whether the pod is being deleted (a deletion
// timestamp, whoever asked): a bound one is neither adopted
// (runningUnowned) nor counted or deleted as part of a half-bound group
// (halfBound).
func (p *podState) terminating() bool { return p.pod != nil && p.pod.DeletionTimestamp != nil }

// boundPod is a bound, non-terminal pod that holds GPUs.
type boundPod struct {
	node string
	gpus int
}

// schedulable reports whether the scheduler may try the pod: it has no
// scheduling gate (the framework holds a gated pod before any PreEnqueue)
// and is not being deleted. A gated or terminating pod is in no gang, is
// never a scout or the leader probe, and does not count towards minMember.
func (p *podState) schedulable() bool { return p.pod == nil || podSchedulable(p.pod) }

// podSchedulable reports whether pod p has no scheduling gate and is not
// being deleted (podState.schedulable).
func podSchedulable(p *v1.Pod) bool {
	return len(p.Spec.SchedulingGates) == 0 && p.DeletionTimestamp == nil
}
