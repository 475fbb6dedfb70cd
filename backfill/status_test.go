package backfill

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/phalanx-sched/phalanx/placement"
)

// TestJobStatus: every state appears in the status list with its times,
// nodes and reason, as text and as JSON.
func TestJobStatus(t *testing.T) {
	e := richEngine(t)
	got := map[string]JobStatus{}
	for _, s := range e.Jobs() {
		got[s.ID] = s
	}
	want := map[string]JobState{"run": StateRunning, "short": StateStarting, "done": StateFinished, "big": StatePending, "wait": StateReserved}
	for id, st := range want {
		if got[id].State != st {
			t.Errorf("job %s is %s, want %s", id, got[id].State, st)
		}
	}
	if s := got["wait"]; s.PlannedStart.IsZero() || s.Nodes == "" || !strings.HasPrefix(s.Reason, "reserved: planned to start at") {
		t.Errorf("reserved job status: %+v", s)
	}
	if s := got["run"]; s.End != s.Start.Add(2*time.Hour) || s.Nodes == "" || s.Overrun {
		t.Errorf("running job status: %+v", s)
	}
	one, ok := e.Job("wait")
	a, _ := json.Marshal(one)
	b, _ := json.Marshal(got["wait"])
	if d := cmp.Diff(string(b), string(a)); !ok || d != "" {
		t.Errorf("Job(wait) differs from its Jobs entry:\n%s", d)
	}
	data, err := json.Marshal(got["run"])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"id":"run"`, `"state":"running"`, `"time_limit":"2h0m0s"`, `"nodes":"node[00001-00003]"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("JSON %s lacks %s", data, want)
		}
	}
	table := FormatJobs(e.Jobs(), epoch)
	for _, want := range []string{"JOBID", "run    a        running", "done   a        finished", "wait   a        reserved"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

// TestNextEvent: the next event is the earliest of a reservation's start,
// a patience's end, a hold's expiry and a running job's limit, and none
// when nothing is due.
func TestNextEvent(t *testing.T) {
	c := opsCluster(t)
	e := opsEngine(t, c, 1)
	if _, ok := e.NextEvent(); ok {
		t.Fatal("an empty engine has a next event")
	}
	job := func(id string, nodes int, limit time.Duration) Job {
		return Job{ID: id, Account: "a", TimeLimit: limit, Gang: member(placement.NodesOf(nodes, 8))}
	}
	step := func(at time.Duration, f func(now time.Time) error) {
		t.Helper()
		if err := f(epoch.Add(at)); err != nil {
			t.Fatal(err)
		}
	}
	schedule := func(now time.Time) error { _, err := e.Schedule(now); return err }
	check := func(want time.Duration) {
		t.Helper()
		got, ok := e.NextEvent()
		if !ok || got != epoch.Add(want) {
			t.Fatalf("NextEvent = %v, %v; want t+%v", got.Sub(epoch), ok, want)
		}
	}
	step(0, func(now time.Time) error { return e.Submit(job("run", 8, 3*time.Hour), now) })
	step(0, schedule)
	check(3 * time.Hour) // its limit
	step(time.Minute, func(now time.Time) error { return e.Submit(job("big", 8, time.Hour), now) })
	step(time.Minute, schedule)
	check(3 * time.Hour) // the reservation starts when run's limit ends
	patient := job("patient", 1, time.Hour)
	patient.Patience = Patience{MaxDomains: 1, Wait: 20 * time.Minute}
	step(2*time.Minute, func(now time.Time) error { return e.Submit(patient, now) })
	check(22 * time.Minute) // its patience ends
}
