package fairshare

import (
	"fmt"
	"math"
)

// Prepared is a job checked once against a tree and kept in the form
// View.Rank reads: a scheduler that ranks its whole queue every cycle
// prepares each job when it joins the queue (Tree.Prepare) instead of
// having Prioritize look up and check every job's account on every call.
// The zero Prepared is not a job: Rank rejects it.
type Prepared struct {
	id, account string
	acct        int32 // index of the account in the tree
	submit      int64 // nanoseconds since 1970
	gpus        int
	qos, part   float64
}

// ID returns the job's ID.
func (p Prepared) ID() string { return p.id }

// Prepare checks j as Tree.CheckJob does and returns it ready for
// View.Rank. Errors wrap ErrUnknownAccount, ErrNotLeaf or ErrBadJob and
// name the job.
//
// A Prepared stays valid for Views of this tree while the job's account
// stays a leaf: accounts keep their place in the tree for its lifetime.
// It is valid for a clone of the tree too if its account existed when the
// clone was made. Rank reports a job whose account has since been given
// sub-accounts, as Prioritize would.
func (t *Tree) Prepare(j QueuedJob) (Prepared, error) {
	acct, sub, err := checkJob(t.st, &j)
	if err != nil {
		return Prepared{}, err
	}
	// The tree's own copy of the name: Rank's check that the job belongs
	// to the view's tree then compares a string with itself.
	return Prepared{id: j.ID, account: t.st.nodes[acct].name, acct: acct, submit: sub,
		gpus: j.GPUs, qos: j.QOS, part: j.Partition}, nil
}

// RankEntry is one job's place in View.Rank's order.
type RankEntry struct {
	// Index is the job's position in the slice given to Rank.
	Index int
	// Priority is the job's priority, the same as Prioritize's.
	Priority uint64

	submit int64
	id     string
}

// Rank orders jobs at the view's instant exactly as Prioritize orders the
// same jobs (highest priority first; ties to the earlier submit time, the
// smaller ID, the earlier position), and gives each its priority but not
// the factor breakdown (Prioritize gives that, for the jobs a user asks
// about). It writes into out's storage and returns the result; nothing is
// allocated when out has room.
//
// It costs a few arithmetic operations per job plus the sort, which is
// about linear when jobs are nearly in ranked order (the previous
// ranking's order, say): with the accounts resolved and the jobs checked
// by Tree.Prepare, and 40-byte entries to sort instead of Prioritize's
// 170-byte ones, a scheduler's per-cycle ranking costs a fraction of
// Prioritize's (BenchmarkRank against BenchmarkPrioritize).
//
// Jobs must have been prepared by the view's tree (see Tree.Prepare). The
// zero Prepared, a job whose account has since been given sub-accounts,
// or one prepared by another tree in which its account has a different
// place stops the ranking with an error wrapping ErrUnknownAccount or
// ErrNotLeaf that names it. (A job prepared by another tree in which its
// account has the same place, such as a tree built from the same spec,
// ranks as Prioritize would rank it against this view.)
func (s *View) Rank(jobs []Prepared, out []RankEntry) ([]RankEntry, error) {
	out = out[:0]
	if cap(out) < len(jobs) {
		out = make([]RankEntry, 0, len(jobs))
	}
	sc := &s.sc
	for n := range jobs {
		j := &jobs[n]
		if err := s.checkPrepared(j); err != nil {
			return out[:0], err
		}
		prio, _ := sc.score(s.now, j.submit, s.factor[j.acct], j.gpus, j.qos, j.part, nil, nil)
		out = append(out, RankEntry{Index: n, Priority: prio, submit: j.submit, id: j.id})
	}
	sortRanked(out)
	return out, nil
}

// Priority returns one job's priority at the view's instant, the one
// Rank and Prioritize give it, without ranking a queue: for a scheduler
// that keeps its queue in order itself (see Weights.SubmitOrdered) and
// reports priorities only for the jobs it tells about. Errors are Rank's.
func (s *View) Priority(j *Prepared) (uint64, error) {
	if err := s.checkPrepared(j); err != nil {
		return 0, err
	}
	prio, _ := s.sc.score(s.now, j.submit, s.factor[j.acct], j.gpus, j.qos, j.part, nil, nil)
	return prio, nil
}

// Submitted returns the job's submit time in nanoseconds since 1970, the
// first key of submit order (Weights.SubmitOrdered).
func (p Prepared) Submitted() int64 { return p.submit }

// Static returns the part of job j's priority at the view's instant that
// does not grow as the job waits: its weighted fair-share, size, QOS and
// partition factors, summed, before rounding and without the starvation
// boost. While no job reaches Config.MaxAge (nor the starvation bound) and
// the accounts' fair-share factors stay as they are, every job's priority
// before rounding grows by the same amount, the age weight for each MaxAge
// waited, so Static minus the age weight times submit/MaxAge orders jobs
// the same way at every instant, to within rounding: a scheduler that
// keeps its queue in order between views needs to look again only at the
// jobs whose priority before rounding (that value plus the age weight
// times the time since the fixed instant over MaxAge) crossed a half
// point. Errors are Rank's.
func (s *View) Static(j *Prepared) (float64, error) {
	if err := s.checkPrepared(j); err != nil {
		return 0, err
	}
	sc := &s.sc
	var size float64
	if sc.gpus > 0 {
		g := min(float64(j.gpus), sc.gpus)
		if sc.favorSmall {
			size = min(1-(max(g, 1)-1)/sc.gpus, 1)
		} else {
			size = g / sc.gpus
		}
	}
	w := &sc.w
	return w.FairShare*s.factor[j.acct] + w.JobSize*size + w.QOS*j.qos + w.Partition*j.part, nil
}

// checkPrepared reports whether j belongs to the view's tree and still
// names a leaf.
func (s *View) checkPrepared(j *Prepared) error {
	st := s.st
	if j.acct <= 0 || int(j.acct) >= len(st.nodes) || st.nodes[j.acct].name != j.account {
		return fmt.Errorf("%w: job %q was not prepared by this view's tree (account %q)", ErrUnknownAccount, j.id, j.account)
	}
	if !st.isLeaf(j.acct) {
		return fmt.Errorf("%w: job %q has account %q, which has sub-accounts", ErrNotLeaf, j.id, j.account)
	}
	return nil
}

// scorer holds the configuration's constants that every job's priority
// is computed with.
type scorer struct {
	w          Factors // the weights
	maxAge     float64
	bound      int64
	boost      uint64
	gpus       float64
	favorSmall bool
}

func newScorer(c *Config) scorer {
	return scorer{
		w: Factors{
			Age: float64(c.Weights.Age), FairShare: float64(c.Weights.FairShare),
			JobSize: float64(c.Weights.JobSize), QOS: float64(c.Weights.QOS),
			Partition: float64(c.Weights.Partition),
		},
		maxAge: float64(c.MaxAge), bound: int64(c.StarvationBound), boost: c.boost(),
		gpus: float64(c.ClusterGPUs), favorSmall: c.FavorSmall,
	}
}

// score returns one job's priority and boost at now (nanoseconds), and
// fills f and wf, when not nil, with its factors and weighted factors:
// the formula Prioritize documents, shared by Prioritize and Rank so that
// they agree to the bit.
func (sc *scorer) score(now, sub int64, fairShare float64, gpus int, qos, part float64, f, wf *Factors) (prio, boost uint64) {
	var wait int64 // saturating now - sub, at least 0
	if now > sub {
		wait = int64(uint64(now) - uint64(sub))
		if wait < 0 {
			wait = math.MaxInt64
		}
	}
	var age, size float64
	if sc.maxAge > 0 {
		age = min(float64(wait)/sc.maxAge, 1)
	}
	if sc.gpus > 0 {
		g := min(float64(gpus), sc.gpus)
		if sc.favorSmall {
			size = min(1-(max(g, 1)-1)/sc.gpus, 1)
		} else {
			size = g / sc.gpus
		}
	}
	w := &sc.w
	weighted := Factors{
		Age: w.Age * age, FairShare: w.FairShare * fairShare,
		JobSize: w.JobSize * size, QOS: w.QOS * qos,
		Partition: w.Partition * part,
	}
	prio = uint64(math.Round(weighted.Sum()))
	if sc.bound > 0 && wait > sc.bound {
		boost = sc.boost
		prio += boost
	}
	if f != nil {
		*f = Factors{Age: age, FairShare: fairShare, JobSize: size, QOS: qos, Partition: part}
		*wf = weighted
	}
	return prio, boost
}
