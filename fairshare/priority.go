package fairshare

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// QueuedJob is a pending job as the priority calculation sees it.
type QueuedJob struct {
	// ID identifies the job; it breaks ties after the submit time. IDs
	// should be unique; equal IDs fall back to input order.
	ID string
	// Account is the leaf account the job runs under.
	Account string
	// Submit is when the job was submitted; its wait is now - Submit.
	// A submit time after now counts as no wait. The zero time is an
	// error.
	Submit time.Time
	// GPUs is the number of GPUs the job asks for (0 or more).
	GPUs int
	// QOS is the job's QOS factor in [0, 1], for example its QOS's
	// priority over the highest QOS priority at the site.
	QOS float64
	// Partition is the job's partition factor in [0, 1], for example its
	// partition's priority over the highest partition priority.
	Partition float64
}

// Factors holds one value per priority factor: the factors themselves
// (each in [0, 1]) in Ranked.Factors, weight times factor in
// Ranked.Weighted.
type Factors struct {
	// Age is for the time waited, up to Config.MaxAge.
	Age float64
	// FairShare is for the fair-share factor of the job's account.
	FairShare float64
	// JobSize is for the GPU count against Config.ClusterGPUs.
	JobSize float64
	// QOS is for the job's QOS factor.
	QOS float64
	// Partition is for the job's partition factor.
	Partition float64
}

// Sum returns the sum of the five values.
func (f Factors) Sum() float64 {
	return f.Age + f.FairShare + f.JobSize + f.QOS + f.Partition
}

// Ranked is one job's place in the queue, with the breakdown that explains
// it.
type Ranked struct {
	// Index is the job's position in the slice given to Prioritize.
	Index int
	// ID, Account and Submit are copied from the job.
	ID      string
	Account string
	Submit  time.Time
	// Priority is round(Weighted.Sum()) + Boost. Higher goes first.
	Priority uint64
	// Factors are the job's factors, each in [0, 1].
	Factors Factors
	// Weighted are the factors times their weights: each factor's share
	// of Priority.
	Weighted Factors
	// Boost is the starvation boost, or 0 if the job is not starving.
	Boost uint64

	submit int64 // Submit in nanoseconds, for sorting
}

// String explains the job's priority on one line, for example
//
//	j1 (alice) 6084 = age 500 (0.500) + fairshare 4084.79 (0.408) + size 0 (0.000) + qos 1000 (1.000) + partition 500 (0.500)
//
// followed by "+ boost N" when the job is starving.
func (r Ranked) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s) %d =", r.ID, r.Account, r.Priority)
	parts := [...]struct {
		name string
		w, f float64
	}{
		{"age", r.Weighted.Age, r.Factors.Age},
		{"fairshare", r.Weighted.FairShare, r.Factors.FairShare},
		{"size", r.Weighted.JobSize, r.Factors.JobSize},
		{"qos", r.Weighted.QOS, r.Factors.QOS},
		{"partition", r.Weighted.Partition, r.Factors.Partition},
	}
	for i, p := range parts {
		if i > 0 {
			b.WriteString(" +")
		}
		fmt.Fprintf(&b, " %s %.6g (%.3f)", p.name, p.w, p.f)
	}
	if r.Boost > 0 {
		fmt.Fprintf(&b, " + boost %d", r.Boost)
	}
	return b.String()
}

// CheckJob reports whether j is acceptable to Prioritize: a leaf account
// of the tree, a submit time, GPUs >= 0, QOS and partition factors in
// [0, 1]. Use it at submission so that a bad job never reaches the queue.
// Errors wrap ErrUnknownAccount, ErrNotLeaf or ErrBadJob and name the job.
func (t *Tree) CheckJob(j QueuedJob) error {
	_, _, err := checkJob(t.st, &j)
	return err
}

// checkJob validates j and returns its account index and submit time.
func checkJob(st *structure, j *QueuedJob) (int32, int64, error) {
	i, ok := st.index[j.Account]
	if !ok {
		return 0, 0, fmt.Errorf("%w: job %q has account %q", ErrUnknownAccount, j.ID, j.Account)
	}
	if !st.isLeaf(i) {
		return 0, 0, fmt.Errorf("%w: job %q has account %q, which has sub-accounts", ErrNotLeaf, j.ID, j.Account)
	}
	if j.Submit.Before(minTime) || j.Submit.After(maxTime) {
		return 0, 0, fmt.Errorf("%w: job %q has submit time %v", ErrBadJob, j.ID, j.Submit)
	}
	if j.GPUs < 0 {
		return 0, 0, fmt.Errorf("%w: job %q asks for %d GPUs", ErrBadJob, j.ID, j.GPUs)
	}
	if !(j.QOS >= 0 && j.QOS <= 1) {
		return 0, 0, fmt.Errorf("%w: job %q has QOS factor %v, want [0, 1]", ErrBadJob, j.ID, j.QOS)
	}
	if !(j.Partition >= 0 && j.Partition <= 1) {
		return 0, 0, fmt.Errorf("%w: job %q has partition factor %v, want [0, 1]", ErrBadJob, j.ID, j.Partition)
	}
	return i, j.Submit.UnixNano(), nil
}

// Prioritize computes a view at now and ranks jobs against it; see
// View.Prioritize. It allocates a View per call: a scheduler that
// ranks every cycle should keep one and call Tree.View with it.
func (t *Tree) Prioritize(jobs []QueuedJob, now time.Time, out []Ranked) ([]Ranked, error) {
	s, err := t.View(now, nil)
	if err != nil {
		return out[:0], err
	}
	return s.Prioritize(jobs, out)
}

// Prioritize ranks jobs at the view's instant, highest priority first,
// each with its factor breakdown. It writes into out's storage (pass nil,
// or the previous result to avoid allocating) and returns the result.
//
// Each job's priority is the sum of weight times factor, rounded, plus
// the starvation boost when the guard is on and the job has waited longer
// than Config.StarvationBound:
//
//   - age: wait / MaxAge, capped at 1;
//   - fair share: the view's factor of the job's account;
//   - job size: GPUs / ClusterGPUs capped at 1, or with FavorSmall
//     1 - (GPUs-1) / ClusterGPUs clamped to [1/ClusterGPUs, 1];
//   - QOS and partition: the job's own factors.
//
// Equal priorities go to the earlier submit time, then the smaller ID
// (byte order), then the earlier position in jobs, so the order is total
// and deterministic (and, with distinct IDs, independent of the order of
// jobs). The cost is O(jobs log jobs), about O(jobs) when jobs are nearly
// in ranked order (the previous ranking's order, say); nothing is
// allocated when out has room.
//
// The first bad job stops the ranking with an error wrapping
// ErrUnknownAccount, ErrNotLeaf or ErrBadJob that names it (see
// Tree.CheckJob).
func (s *View) Prioritize(jobs []QueuedJob, out []Ranked) ([]Ranked, error) {
	out = slices.Grow(out[:0], len(jobs))
	sc := &s.sc
	for n := range jobs {
		j := &jobs[n]
		acct, sub, err := checkJob(s.st, j)
		if err != nil {
			return out[:0], err
		}
		r := Ranked{Index: n, ID: j.ID, Account: j.Account, Submit: j.Submit, submit: sub}
		r.Priority, r.Boost = sc.score(s.now, sub, s.factor[acct], j.GPUs, j.QOS, j.Partition, &r.Factors, &r.Weighted)
		out = append(out, r)
	}
	sortRanked(out)
	return out, nil
}
