package sim

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/phalanx-sched/phalanx/backfill"
)

// Preemption is a preemption policy for the simulator: a share of the
// jobs, drawn with Config.Seed, is urgent (class 1, never preempted);
// every other job is class 0 and preemptible with policy requeue (it goes
// back to the queue with its submit time and starts over: the simulated
// jobs do not checkpoint). The engine preempts with its
// backfill.PreemptionConfig (Config.Engine's, or the defaults), turned
// on.
type Preemption struct {
	// UrgentShare is the share of urgent jobs, in [0, 1].
	UrgentShare float64
	// Release is how long the simulated host takes to report a victim
	// released after the cycle that preempted it (0: the engine's
	// Grace, as when every victim runs out its grace).
	Release time.Duration
	// Off keeps the classes and the metrics but does not preempt: the
	// baseline for the urgent jobs' waits.
	Off bool
}

// drawUrgent marks the urgent jobs.
func (r *runner) drawUrgent() error {
	p := r.cfg.Preemption
	if p == nil {
		return nil
	}
	if !(p.UrgentShare >= 0 && p.UrgentShare <= 1) || p.Release < 0 {
		return errors.New("sim: Preemption.UrgentShare must be in [0, 1] and Release not negative")
	}
	if r.cfg.Policy == PodByPod {
		return errors.New("sim: pod-by-pod does not preempt")
	}
	rng := rand.New(rand.NewPCG(r.cfg.Seed, 0x5eed))
	for i := range r.out {
		r.out[i].Urgent = rng.Float64() < p.UrgentShare
	}
	return nil
}

// releaseDelay is when, after the cycle that preempted it, the host
// reports a victim released.
func (r *runner) releaseDelay(e *backfill.Engine) time.Duration {
	if d := r.cfg.Preemption.Release; d > 0 {
		return d
	}
	return e.Config().Preemption.Grace
}

// release reports preempted job i released at abs, unless it finished
// meanwhile; it is requeued, and the work of its run is lost.
func (r *runner) release(e *backfill.Engine, i int, abs time.Time) error {
	if st, ok := e.Job(r.jobs[i].ID); !ok || st.State != backfill.StatePreempting {
		return nil
	}
	if err := e.Preempted(r.jobs[i].ID, abs); err != nil {
		return err
	}
	o := &r.out[i]
	r.m.Preemptions++
	// The whole run is lost, part of it already at replacements or
	// shrinks (counted in FailureLostGPUSeconds).
	r.m.PreemptedGPUSeconds += r.runGPUSeconds(i, r.now) - r.lostRun[i]
	o.Preemptions++
	r.stopRun(i)
	r.requeue(i)
	return nil
}
