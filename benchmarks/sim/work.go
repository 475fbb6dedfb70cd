package sim

import (
	"fmt"
	"slices"
	"time"
)

// work integrates, as the run goes, what the work-conserving metrics need:
// how many GPUs are busy, down and wanted by queued jobs, and per account
// how many GPUs it runs on and asks for in queued jobs, and whether it has
// work (running or queued).
type work struct {
	total      int // the cluster's GPUs
	down       int // GPUs on failed nodes
	queuedGPUs int // GPUs asked by jobs submitted and not started (their shapes')
	busy       int // GPUs of running jobs
	acctIndex  map[string]int
	acctNames  []string
	acctBusy   []int
	acctJobs   []int // running and queued jobs per account
	acctQueued []int // GPUs asked by queued jobs (their shapes'), per account
	byDemand   []int // scratch: accounts with work, by demand
	withWork   int   // accounts with work
	last       time.Duration
	// Integrals.
	activeSecs     float64   // time with work running or queued
	contendedSecs  float64   // time with jobs queued
	idleQueuedSecs float64   // GPU-seconds idle while queued: min(free, queued GPUs)
	gotSecs        []float64 // per account: its GPU-seconds while contended
	entitledSecs   []float64 // per account: its max-min fair part of the busy GPUs while contended (entitle)
}

// checkWork makes every advance check the counts (check); tests set it.
var checkWork bool

func newWork(total int, jobs []TraceJob) *work {
	w := &work{total: total, acctIndex: map[string]int{}}
	for _, j := range jobs {
		if _, ok := w.acctIndex[j.Account]; !ok {
			w.acctIndex[j.Account] = len(w.acctNames)
			w.acctNames = append(w.acctNames, j.Account)
		}
	}
	n := len(w.acctNames)
	w.acctBusy, w.acctJobs, w.acctQueued = make([]int, n), make([]int, n), make([]int, n)
	w.gotSecs, w.entitledSecs = make([]float64, n), make([]float64, n)
	w.byDemand = make([]int, 0, n)
	return w
}

// advance integrates up to now.
func (w *work) advance(now time.Duration) {
	if checkWork {
		if err := w.check(); err != nil {
			panic(fmt.Sprintf("sim: at %v: %v", now, err))
		}
	}
	dt := (now - w.last).Seconds()
	w.last = now
	if dt <= 0 {
		return
	}
	if w.busy > 0 || w.queuedGPUs > 0 {
		w.activeSecs += dt
	}
	if w.queuedGPUs == 0 {
		return
	}
	w.contendedSecs += dt
	free := max(0, w.total-w.down-w.busy)
	w.idleQueuedSecs += float64(min(free, w.queuedGPUs)) * dt
	if w.withWork == 0 {
		return
	}
	w.byDemand = w.byDemand[:0]
	for a, jobs := range w.acctJobs {
		if jobs > 0 {
			w.byDemand = append(w.byDemand, a)
			w.gotSecs[a] += float64(w.acctBusy[a]) * dt
		}
	}
	w.entitle(dt)
}

// check verifies the counts: the per-account queued and busy GPUs add up
// to the totals, none is negative, and an account has jobs exactly when it
// asks for GPUs.
func (w *work) check() error {
	queued, busy, with := 0, 0, 0
	for a := range w.acctNames {
		if w.acctQueued[a] < 0 || w.acctBusy[a] < 0 || w.acctJobs[a] < 0 {
			return fmt.Errorf("account %s: %d GPUs queued, %d busy, %d jobs", w.acctNames[a], w.acctQueued[a], w.acctBusy[a], w.acctJobs[a])
		}
		if (w.acctJobs[a] > 0) != (w.demand(a) > 0) {
			return fmt.Errorf("account %s: %d jobs asking for %d GPUs", w.acctNames[a], w.acctJobs[a], w.demand(a))
		}
		queued, busy = queued+w.acctQueued[a], busy+w.acctBusy[a]
		if w.acctJobs[a] > 0 {
			with++
		}
	}
	if queued != w.queuedGPUs || busy != w.busy || with != w.withWork {
		return fmt.Errorf("accounts: %d GPUs queued, %d busy, %d with work; totals %d, %d, %d", queued, busy, with, w.queuedGPUs, w.busy, w.withWork)
	}
	return nil
}

// demand is what account a asks for now: the GPUs it runs on and those
// its queued jobs ask for.
func (w *work) demand(a int) int { return w.acctBusy[a] + w.acctQueued[a] }

// entitle adds dt of the accounts' entitlements: the busy GPUs shared
// max-min fairly among the accounts with work (w.byDemand), each getting
// an equal part but no more than its demand, what one does not ask for
// shared among the others (water-filling, smallest demand first). The
// parts add up to the busy GPUs, since those are part of the demands.
func (w *work) entitle(dt float64) {
	slices.SortFunc(w.byDemand, func(a, b int) int {
		if d := w.demand(a) - w.demand(b); d != 0 {
			return d
		}
		return a - b
	})
	left := float64(w.busy)
	for i, a := range w.byDemand {
		part := min(left/float64(len(w.byDemand)-i), float64(w.demand(a)))
		w.entitledSecs[a] += part * dt
		left -= part
	}
}

// job records a job entering (+1) or leaving (-1) the system for its
// account (queued or running counts as in).
func (w *work) job(account string, sign int) {
	a := w.acctIndex[account]
	before := w.acctJobs[a]
	w.acctJobs[a] += sign
	switch {
	case before == 0 && w.acctJobs[a] > 0:
		w.withWork++
	case before > 0 && w.acctJobs[a] == 0:
		w.withWork--
	}
}

// queued adds GPUs of an account's job to (or, negative, takes them
// from) the queue.
func (w *work) queued(account string, gpus int) {
	w.queuedGPUs += gpus
	w.acctQueued[w.acctIndex[account]] += gpus
}

// running adds GPUs of an account to (or takes them from) the busy count.
func (w *work) running(account string, gpus int) {
	w.busy += gpus
	w.acctBusy[w.acctIndex[account]] += gpus
}

// shareGap returns, over the contended time, the largest gap between an
// account's share of the GPU time and its entitlement (its max-min fair
// part of the busy GPUs at each instant: entitle), as a fraction of the
// contended GPU time, and the per-account shares.
func (w *work) shareGap() (float64, []AccountShare) {
	total := 0.0
	for _, g := range w.gotSecs {
		total += g
	}
	gap := 0.0
	var shares []AccountShare
	for a, name := range w.acctNames {
		s := AccountShare{Account: name}
		if total > 0 {
			s.Share, s.Entitlement = w.gotSecs[a]/total, w.entitledSecs[a]/total
		}
		gap = max(gap, abs(s.Share-s.Entitlement))
		shares = append(shares, s)
	}
	slices.SortFunc(shares, func(a, b AccountShare) int { return compareStrings(a.Account, b.Account) })
	return gap, shares
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
