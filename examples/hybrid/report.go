package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// outcome is what one policy did over the window.
type outcome struct {
	name string
	span time.Duration
	// gpuSeconds held by kind (training on its nodes, serving, training
	// on serving's nodes); hourly the same by hour of the day, with
	// serving's demand [3]; hourSeconds the seconds simulated in each
	// hour of the day.
	gpuSeconds  [3]float64
	hourly      [24][4]float64
	hourSeconds [24]float64
	// Training: jobs submitted, waits of those that started, those that
	// never did.
	trainJobs      int
	trainWaits     []time.Duration
	trainUnstarted int
	// Serving: replicas asked for, start delays of those that started,
	// those that waited past the SLO without starting.
	serveAsked  int
	serveDelays []time.Duration
	serveLate   int
	// Training jobs moved onto serving's nodes; preemptions and the
	// work they lost.
	moves        int
	preemptions  int
	lostGPUHours float64
	slo          time.Duration
}

// started records a job's first start.
func (o *outcome) started(j *job, now time.Time) {
	if j.serving {
		o.serveDelays = append(o.serveDelays, now.Sub(j.submit))
		return
	}
	o.trainWaits = append(o.trainWaits, now.Sub(j.submit))
}

// trainUtil is the share of the cluster's GPU-time training used.
func (o *outcome) trainUtil() float64 {
	return (o.gpuSeconds[kTrain] + o.gpuSeconds[kBorrowed]) / (float64(labNodes*8) * o.span.Seconds())
}

// servedShare is the share of the replicas asked for that started within
// the SLO (replicas withdrawn before the SLO passed without starting are
// not counted).
func (o *outcome) servedShare() float64 {
	late := o.serveLate
	for _, d := range o.serveDelays {
		if d > o.slo {
			late++
		}
	}
	n := len(o.serveDelays) + o.serveLate
	if n == 0 {
		return 1
	}
	return 1 - float64(late)/float64(n)
}

// percentile returns the nearest-rank p-quantile of ds, as the
// simulator's tables report it: the ceil(p n)-th smallest of its n values
// (the smallest for p = 0; 0 when ds is empty), no interpolation.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// printTable prints one row per policy.
func printTable(w io.Writer, o options, outs []*outcome) {
	fmt.Fprintf(w, "%-8s %10s %9s %10s %10s %9s %6s %12s %11s %11s %10s\n", "policy", "train util", "busy", "train wait", "p95 wait",
		"unstarted", "moved", "served<=SLO", "worst delay", "preemptions", "GPU-h lost")
	for _, x := range outs {
		busy := (x.gpuSeconds[0] + x.gpuSeconds[1] + x.gpuSeconds[2]) / (float64(labNodes*8) * x.span.Seconds())
		fmt.Fprintf(w, "%-8s %9.1f%% %8.1f%% %10s %10s %9d %6d %11.2f%% %11s %11d %10.1f\n", x.name, 100*x.trainUtil(), 100*busy,
			round(mean(x.trainWaits)), round(percentile(x.trainWaits, 0.95)), x.trainUnstarted, x.moves, 100*x.servedShare(),
			round(percentile(x.serveDelays, 1)), x.preemptions, x.lostGPUHours)
	}
	fmt.Fprintf(w, "(train util: training's share of the lab's GPU-time; busy: training and serving; waits of the %d training jobs that started;\n",
		len(outs[0].trainWaits))
	fmt.Fprintf(w, " moved: training jobs moved onto serving's nodes; served<=SLO: replicas asked for that started within %v;\n", o.slo)
	fmt.Fprintf(w, " worst delay: of a replica that started; GPU-h lost: work of preempted training gangs since their start)\n")
}

func round(d time.Duration) time.Duration { return d.Round(time.Second) }

// printBoundary prints, for each hour of the day, the average GPUs
// serving asked for and used and training used.
func printBoundary(w io.Writer, x *outcome) {
	fmt.Fprintf(w, "%5s %14s %12s %21s %24s %6s\n", "hour", "serving asked", "serving ran", "training on its nodes",
		"training on serving's", "idle")
	for hr := range 24 {
		secs := x.hourSeconds[hr]
		if secs == 0 {
			continue
		}
		t, s, b, d := x.hourly[hr][kTrain]/secs, x.hourly[hr][kServe]/secs, x.hourly[hr][kBorrowed]/secs, x.hourly[hr][3]/secs
		fmt.Fprintf(w, "%02d:00 %14.0f %12.0f %21.0f %24.0f %6.0f\n", hr, d, s, t, b, float64(labNodes*8)-t-s-b)
	}
}
