package backfill

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/internal/datadriven"
	"github.com/phalanx-sched/phalanx/internal/testcluster"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// epoch is time zero of scenario files and property tests.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at parses a scenario time: a Go duration after the epoch ("90m"), or
// plain seconds; anything else fails the test.
func at(t testing.TB, d *datadriven.Case, v string) time.Time {
	if v == "" {
		return epoch
	}
	if secs, err := strconv.Atoi(v); err == nil {
		return epoch.Add(time.Duration(secs) * time.Second)
	}
	dur, err := time.ParseDuration(v)
	if err != nil {
		d.Fatalf(t, "time %q: %v", v, err)
	}
	return epoch.Add(dur)
}

// scenario is the state of one scenario file.
type scenario struct {
	t      *testing.T
	c      *topology.Cluster
	e      *Engine
	queues QuotaConfig // for the next engine command
}

// TestScenarios runs testdata/*.txt. Every command takes only the
// arguments listed (a misspelt one, or a value that does not parse,
// fails the test). Commands:
//
//	cluster levels=a,b | gen=<generator>      (input: testcluster text)
//	queues                                    (input: one queue a line, for the next engine:
//	                                           name [parent=P] [guarantee=N] [borrow=N|-1]
//	                                           [lend=N|-1] [max=N|-1] [weight=W] [nodes=H]; limits
//	                                           default to -1, Unlimited)
//	state                                     (input: testcluster state text; prints the state)
//	engine [depth=N|conservative] [strict] [maxtest=N] [keep=D]
//	       [hold=off|minGPUs@budget] [holdwait=D] [capwait=D] [hysteresis=D]
//	       [preempt] [exempt=D] [grace=D] [gain=D] [searches=N]
//	       (input: fairshare text form of the accounts)
//	submit id=J [account=A] [at=T] [limit=D] nodes=N|gpus=N [gpn=G] [required=L]
//	       [preferred=L] [exclusive] [patience=k@D] [fail]
//	       [class=K] [policy=never|requeue|cancel] [queue=Q]
//	       [onfail=requeue|fail|replace|shrink] [grow] [min=M] [step=S]  (one member "main")
//	submit id=J ... (input: one member per line: name nodes=N gpn=G [min=M] [step=S] ...)
//	schedule at=T                             (prints the plan)
//	started|finish|cancel|preempted|checkpoint id=J at=T
//	failed id=J at=T [requeue]
//	down|up|drain|resume node=N at=T
//	replacepod|releasepod id=J member=M rank=R at=T   (prints where the pod went)
//	usage                                     (prints every queue's GPUs used, borrowed, waiting)
//	jobs                                      (prints the squeue-like table)
//	next                                      (prints NextEvent)
//	restore                                   (snapshot, JSON, restore; prints what differs)
//
// Every command checks every invariant of the engine afterwards.
func TestScenarios(t *testing.T) {
	var sc scenario
	datadriven.Glob(t, "testdata/*.txt", func(t *testing.T, d *datadriven.Case) string {
		sc.t = t
		out := sc.run(d)
		if sc.e != nil {
			if err := sc.e.check(); err != nil {
				d.Fatalf(t, "invariant broken: %v", err)
			}
		}
		return out
	})
}

func (sc *scenario) run(d *datadriven.Case) string {
	t := sc.t
	get := func(k string) string { v, _ := d.Get(k); return v }
	switch d.Cmd {
	case "cluster":
		return sc.cluster(d)
	case "engine":
		return sc.engine(d)
	case "queues":
		d.Only(t)
		sc.queues = parseQueues(t, d)
		return fmt.Sprintf("%d queues", len(sc.queues.Queues))
	case "state":
		d.Only(t)
		if d.Input != "" {
			if err := testcluster.ApplyState(sc.e.ledger.State(), d.Input); err != nil {
				d.Fatalf(t, "%v", err)
			}
		}
		return sc.e.ledger.State().Describe()
	case "submit":
		return result(sc.e.Submit(sc.job(d), at(t, d, get("at"))))
	case "schedule":
		d.Only(t, "at")
		p, err := sc.e.Schedule(at(t, d, get("at")))
		if err != nil {
			return "error: " + err.Error()
		}
		return p.Describe(sc.c, epoch)
	case "started", "finish", "cancel", "failed", "preempted", "checkpoint":
		return sc.jobEvent(d)
	case "down", "up", "drain", "resume":
		return sc.nodeEvent(d)
	case "replacepod", "releasepod":
		return sc.podEvent(d)
	case "jobs":
		d.Only(t)
		return FormatJobs(sc.e.Jobs(), epoch)
	case "usage":
		d.Only(t)
		var b strings.Builder
		for _, q := range sc.e.Queues() {
			fmt.Fprintf(&b, "%s: used %d, borrowed %d, waiting %d\n", q.Name, q.Used, q.Borrowed, q.Waiting)
		}
		return b.String()
	case "next":
		d.Only(t)
		if n, ok := sc.e.NextEvent(); ok {
			return "next event at " + formatTime(n, epoch)
		}
		return "no next event"
	case "restore":
		d.Only(t)
		sc.e = roundTrip(t, sc.e)
		return "restored"
	}
	d.Fatalf(t, "unknown command")
	return ""
}

func result(err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return "ok"
}

func (sc *scenario) cluster(d *datadriven.Case) string {
	d.Only(sc.t, "levels", "gen")
	var levels []string
	if lv, _ := d.Get("levels"); lv != "" {
		levels = strings.Split(lv, ",")
	}
	gen, _ := d.Get("gen")
	var err error
	if sc.c, err = testcluster.Parse(levels, gen, d.Input); err != nil {
		d.Fatalf(sc.t, "%v", err)
	}
	sc.e = nil
	return strings.SplitN(sc.c.Describe(), "\n", 2)[0]
}

func (sc *scenario) engine(d *datadriven.Case) string {
	t := sc.t
	d.Only(t, "depth", "strict", "maxtest", "hold", "holdwait", "capwait", "hysteresis", "keep", "preempt", "exempt", "grace", "gain", "searches")
	cfg := DefaultConfig()
	cfg.FairShare.Weights = fairshare.Weights{Age: 1000, FairShare: 1000}
	cfg.FairShare.MaxAge = 24 * time.Hour
	if v, _ := d.Get("depth"); v == "conservative" {
		cfg.ReservationDepth = Conservative
	} else {
		cfg.ReservationDepth = d.Int(t, "depth", cfg.ReservationDepth)
	}
	cfg.Strict = d.Has("strict")
	cfg.MaxJobsTested = d.Int(t, "maxtest", 0)
	cfg.KeepEnded = d.Duration(t, "keep", cfg.KeepEnded)
	switch v, _ := d.Get("hold"); v {
	case "":
	case "off":
		cfg.Hold.Enabled = false
	default:
		gpus, budget, _ := strings.Cut(v, "@")
		var err1, err2 error
		cfg.Hold.MinGPUs, err1 = strconv.Atoi(gpus)
		cfg.Hold.Budget, err2 = time.ParseDuration(budget)
		if err1 != nil || err2 != nil {
			d.Fatalf(t, "hold=%q: want off, or min-GPUs@budget", v)
		}
	}
	cfg.Hold.MinWait = d.Duration(t, "holdwait", 0)
	cfg.Hold.CapWait = d.Duration(t, "capwait", cfg.Hold.CapWait)
	cfg.Hold.Hysteresis = d.Duration(t, "hysteresis", cfg.Hold.Hysteresis)
	pc := &cfg.Preemption
	pc.Enabled = d.Has("preempt")
	pc.ExemptTime = d.Duration(t, "exempt", pc.ExemptTime)
	pc.Grace = d.Duration(t, "grace", pc.Grace)
	pc.MinGain = d.Duration(t, "gain", pc.MinGain)
	pc.MaxSearches = d.Int(t, "searches", pc.MaxSearches)
	cfg.Quotas, sc.queues = sc.queues, QuotaConfig{}
	text := d.Input
	if strings.TrimSpace(text) == "" {
		text = "a\nb\n"
	}
	spec, err := fairshare.ParseText(text)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	tree, err := fairshare.BuildTree(spec, cfg.FairShare)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	if sc.e, err = New(sc.c, cfg, tree); err != nil {
		return "error: " + err.Error()
	}
	// Every test the walk would skip runs anyway and must agree, and
	// every search skipped as a repeat of a failed one runs and must fail.
	sc.e.checkEach = true
	out := fmt.Sprintf("engine: depth %d, strict %v, hold %v (min %d GPUs, budget %v)", cfg.ReservationDepth, cfg.Strict,
		cfg.Hold.Enabled, cfg.Hold.MinGPUs, cfg.Hold.Budget)
	if pc.Enabled {
		out += fmt.Sprintf(", preemption (exempt %v, grace %v, gain %v)", pc.ExemptTime, pc.Grace, pc.MinGain)
	}
	return out
}

// job builds the job of a submit command.
func (sc *scenario) job(d *datadriven.Case) Job {
	t := sc.t
	get := func(k string) string { v, _ := d.Get(k); return v }
	j := Job{ID: get("id"), Account: get("account"), Submit: at(t, d, get("at")), TimeLimit: d.Duration(t, "limit", 0), Queue: get("queue")}
	if j.Account == "" {
		j.Account = "a"
	}
	if p := get("patience"); p != "" {
		k, w, _ := strings.Cut(p, "@")
		var err1, err2 error
		j.Patience.MaxDomains, err1 = strconv.Atoi(k)
		j.Patience.Wait, err2 = time.ParseDuration(w)
		if err1 != nil || err2 != nil {
			d.Fatalf(t, "patience=%q: want k@duration", p)
		}
	}
	if d.Has("fail") {
		j.OnNodeFailure = Fail
	}
	if p := get("onfail"); p != "" {
		var ok bool
		if j.OnNodeFailure, ok = ParseFailurePolicy(p); !ok {
			d.Fatalf(t, "onfail=%q: want requeue, fail, replace or shrink", p)
		}
	}
	j.Class = d.Int(t, "class", 0)
	if p := get("policy"); p != "" {
		var ok bool
		if j.Preemption, ok = preempt.ParsePolicy(p); !ok {
			d.Fatalf(t, "policy=%q: want never, requeue or cancel", p)
		}
	}
	j.Grow = d.Has("grow")
	jobKeys := []string{"id", "account", "at", "limit", "patience", "fail", "class", "policy", "queue", "onfail", "grow"}
	if strings.TrimSpace(d.Input) == "" {
		d.Only(t, append(jobKeys, append(requestKeys, "min", "step")...)...)
		var args []datadriven.Arg
		for _, a := range d.Args {
			if slices.Contains(requestKeys, a.Key) {
				args = append(args, a)
			}
		}
		j.Gang.Members = []gang.Member{{Name: "main", Request: requestArgs(t, d, args), Min: d.Int(t, "min", 0), Step: d.Int(t, "step", 0)}}
		return j
	}
	d.Only(t, jobKeys...)
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		f := strings.Fields(line)
		var args []datadriven.Arg
		m := gang.Member{Name: f[0]}
		for _, x := range f[1:] {
			k, v, _ := strings.Cut(x, "=")
			if k == "min" || k == "step" {
				n, err := strconv.Atoi(v)
				if err != nil {
					d.Fatalf(t, "%s=%q is not an integer", k, v)
				}
				if k == "min" {
					m.Min = n
				} else {
					m.Step = n
				}
				continue
			}
			args = append(args, datadriven.Arg{Key: k, Val: v})
		}
		m.Request = requestArgs(t, d, args)
		j.Gang.Members = append(j.Gang.Members, m)
	}
	return j
}

var requestKeys = []string{"nodes", "gpn", "gpus", "required", "preferred", "exclusive"}

// requestArgs builds a placement request from nodes=, gpn=, gpus=,
// required=, preferred= and exclusive; any other key, or a count that is
// not an integer, fails the test.
func requestArgs(t *testing.T, d *datadriven.Case, args []datadriven.Arg) placement.Request {
	var r placement.Request
	for _, a := range args {
		n, err := strconv.Atoi(a.Val)
		switch a.Key {
		case "nodes", "gpn", "gpus":
			if err != nil {
				d.Fatalf(t, "%s=%q is not an integer", a.Key, a.Val)
			}
		}
		switch a.Key {
		case "nodes":
			r.Nodes = n
		case "gpn":
			r.GPUsPerNode = n
		case "gpus":
			r.GPUs = n
		case "required":
			r.Required = a.Val
		case "preferred":
			r.Preferred = a.Val
		case "exclusive":
			r.Exclusive = true
		default:
			d.Fatalf(t, "unknown request argument %q", a.Key)
		}
	}
	if r.Nodes == 0 && r.GPUs == 0 {
		d.Fatalf(t, "request without nodes= or gpus=")
	}
	return r
}

func (sc *scenario) jobEvent(d *datadriven.Case) string {
	t := sc.t
	id, _ := d.Get("id")
	v, _ := d.Get("at")
	now := at(t, d, v)
	switch d.Cmd {
	case "failed":
		d.Only(t, "id", "at", "requeue")
		return result(sc.e.Failed(id, now, d.Has("requeue")))
	case "started":
		d.Only(t, "id", "at")
		return result(sc.e.Started(id, now))
	case "cancel":
		d.Only(t, "id", "at")
		return result(sc.e.Cancel(id, now))
	case "preempted":
		d.Only(t, "id", "at")
		return result(sc.e.Preempted(id, now))
	case "checkpoint":
		d.Only(t, "id", "at")
		return result(sc.e.Checkpointed(id, now))
	}
	d.Only(t, "id", "at")
	return result(sc.e.Finished(id, now))
}

func (sc *scenario) nodeEvent(d *datadriven.Case) string {
	t := sc.t
	d.Only(t, "node", "at")
	name, _ := d.Get("node")
	node, ok := sc.c.LookupNode(name)
	if !ok {
		d.Fatalf(t, "unknown node %q", name)
	}
	v, _ := d.Get("at")
	now := at(t, d, v)
	switch d.Cmd {
	case "down":
		evs, err := sc.e.NodeDown(node, now)
		if err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("%+v", evs)
	case "up":
		return result(sc.e.NodeUp(node, now))
	case "drain":
		return result(sc.e.Drain(node, now))
	}
	return result(sc.e.Resume(node, now))
}

// parseQueues parses the input of a queues command.
func parseQueues(t *testing.T, d *datadriven.Case) QuotaConfig {
	var cfg QuotaConfig
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		f := strings.Fields(line)
		q := QueueSpec{Name: f[0], BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited}
		for _, x := range f[1:] {
			k, v, _ := strings.Cut(x, "=")
			switch k {
			case "parent":
				q.Parent = v
				continue
			case "nodes":
				q.Nodes = v
				continue
			}
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				d.Fatalf(t, "queue %s: %s=%q is not a number", q.Name, k, v)
			}
			switch k {
			case "guarantee":
				q.Guarantee = int(n)
			case "borrow":
				q.BorrowingLimit = int(n)
			case "lend":
				q.LendingLimit = int(n)
			case "max":
				q.Maximum = int(n)
			case "weight":
				q.Weight = n
			default:
				d.Fatalf(t, "queue %s: unknown key %q", q.Name, k)
			}
		}
		cfg.Queues = append(cfg.Queues, q)
	}
	return cfg
}

func (sc *scenario) podEvent(d *datadriven.Case) string {
	t := sc.t
	d.Only(t, "id", "member", "rank", "at")
	id, _ := d.Get("id")
	member, _ := d.Get("member")
	v, _ := d.Get("at")
	now, rank := at(t, d, v), d.Int(t, "rank", 0)
	if d.Cmd == "releasepod" {
		return result(sc.e.ReleasePod(id, member, rank, now))
	}
	rep, err := sc.e.ReplacePod(id, member, rank, now)
	switch {
	case err != nil:
		return "error: " + err.Error()
	case !rep.Replaced:
		return fmt.Sprintf("not replaced: %s", rep.Reason)
	}
	return fmt.Sprintf("rank %d: %s -> %s", rep.New.Rank, sc.c.NodeName(rep.Old.Node), sc.c.NodeName(rep.New.Node))
}
