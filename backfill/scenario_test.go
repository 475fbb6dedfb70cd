package backfill

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/internal/datadriven"
	"github.com/phalanx-sched/phalanx/internal/testcluster"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// epoch is time zero of scenario files and property tests.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at parses a scenario time: a Go duration after the epoch ("90m"), or
// plain seconds.
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

// TestScenarios runs testdata/*.txt. Commands:
//
//	cluster levels=a,b | gen=<generator>      (input: testcluster text)
//	state                                     (input: testcluster state text; prints the state)
//	engine [depth=N|conservative] [strict] [hold=share@dur] [maxtest=N]
//	       [accounts]                         (input: fairshare text form)
//	submit id=J [account=A] [at=T] [limit=D] nodes=N [gpn=G] [required=L]
//	       [patience=k@D] [fail]              (one member "main")
//	submit id=J ... (input: one member per line: name nodes=N gpn=G ...)
//	schedule at=T                             (prints the plan)
//	finish id=J at=T | cancel id=J at=T | down node=N at=T | up node=N at=T
func TestScenarios(t *testing.T) {
	var (
		c *topology.Cluster
		e *Engine
	)
	datadriven.Glob(t, "testdata/*.txt", func(t *testing.T, d *datadriven.Case) string {
		get := func(k string) string { v, _ := d.Get(k); return v }
		switch d.Cmd {
		case "cluster":
			var levels []string
			if lv := get("levels"); lv != "" {
				levels = strings.Split(lv, ",")
			}
			var err error
			if c, err = testcluster.Parse(levels, get("gen"), d.Input); err != nil {
				d.Fatalf(t, "%v", err)
			}
			e = nil
			return strings.SplitN(c.Describe(), "\n", 2)[0]
		case "engine":
			cfg := DefaultConfig()
			cfg.FairShare.Weights = fairshare.Weights{Age: 1000, FairShare: 1000}
			cfg.FairShare.MaxAge = 24 * time.Hour
			for _, a := range d.Args {
				switch a.Key {
				case "depth":
					if a.Val == "conservative" {
						cfg.ReservationDepth = Conservative
					} else {
						cfg.ReservationDepth, _ = strconv.Atoi(a.Val)
					}
				case "strict":
					cfg.Strict = true
				case "maxtest":
					cfg.MaxJobsTested, _ = strconv.Atoi(a.Val)
				case "hold":
					share, dur, _ := strings.Cut(a.Val, "@")
					cfg.Hold.MaxShare, _ = strconv.ParseFloat(share, 64)
					cfg.Hold.MaxTime, _ = time.ParseDuration(dur)
				default:
					d.Fatalf(t, "unknown engine option %q", a.Key)
				}
			}
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
			if e, err = New(c, cfg, tree); err != nil {
				return "error: " + err.Error()
			}
			return fmt.Sprintf("engine: depth %d, strict %v, hold %v@%v", cfg.ReservationDepth, cfg.Strict, cfg.Hold.MaxShare, cfg.Hold.MaxTime)
		case "state":
			if d.Input != "" {
				if err := testcluster.ApplyState(e.ledger.State(), d.Input); err != nil {
					d.Fatalf(t, "%v", err)
				}
			}
			return e.State().Describe()
		case "submit":
			j := Job{ID: get("id"), Account: get("account"), Submit: at(t, d, get("at"))}
			if j.Account == "" {
				j.Account = "a"
			}
			if l := get("limit"); l != "" {
				j.TimeLimit, _ = time.ParseDuration(l)
			}
			if p := get("patience"); p != "" {
				k, w, _ := strings.Cut(p, "@")
				j.Patience.MaxDomains, _ = strconv.Atoi(k)
				j.Patience.Wait, _ = time.ParseDuration(w)
			}
			if d.Has("fail") {
				j.OnNodeFailure = Fail
			}
			if strings.TrimSpace(d.Input) == "" {
				j.Gang.Members = []gang.Member{{Name: "main", Request: requestArgs(t, d, d.Args)}}
			} else {
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					f := strings.Fields(line)
					var args []datadriven.Arg
					for _, x := range f[1:] {
						k, v, _ := strings.Cut(x, "=")
						args = append(args, datadriven.Arg{Key: k, Val: v})
					}
					j.Gang.Members = append(j.Gang.Members, gang.Member{Name: f[0], Request: requestArgs(t, d, args)})
				}
			}
			if err := e.Submit(j, j.Submit); err != nil {
				return "error: " + err.Error()
			}
			return "ok"
		case "schedule":
			p, err := e.Schedule(at(t, d, get("at")))
			if err != nil {
				return "error: " + err.Error()
			}
			return p.Describe(c, epoch)
		case "finish", "cancel":
			f := e.Finished
			if d.Cmd == "cancel" {
				f = e.Cancel
			}
			if err := f(get("id"), at(t, d, get("at"))); err != nil {
				return "error: " + err.Error()
			}
			return "ok"
		case "down":
			evs, err := e.NodeDown(get("node"), at(t, d, get("at")))
			if err != nil {
				return "error: " + err.Error()
			}
			return fmt.Sprintf("%+v", evs)
		case "up":
			if err := e.NodeUp(get("node"), at(t, d, get("at"))); err != nil {
				return "error: " + err.Error()
			}
			return "ok"
		}
		d.Fatalf(t, "unknown command")
		return ""
	})
}

// requestArgs builds a placement request from nodes=, gpn=, gpus=,
// required=, exclusive arguments (others are ignored here).
func requestArgs(t *testing.T, d *datadriven.Case, args []datadriven.Arg) placement.Request {
	var r placement.Request
	for _, a := range args {
		n, _ := strconv.Atoi(a.Val)
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
		}
	}
	if r.Nodes == 0 && r.GPUs == 0 {
		d.Fatalf(t, "request without nodes= or gpus=")
	}
	return r
}
