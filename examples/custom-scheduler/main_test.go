package main

import (
	"strings"
	"testing"
)

func TestCustomScheduler(t *testing.T) {
	var b strings.Builder
	if err := run(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"start pretrain on worker=n[000-179]",
		"llm-70b waits: reserved: planned to start at t+6h0m0s",
		"node n010 failed: pretrain requeued=true",
		"start llm-70b on",
		"finished llm-70b",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The loop ends once every job has finished.
	if !strings.HasSuffix(strings.TrimSpace(out), "finished llm-70b") {
		t.Errorf("last line is not the last completion:\n%s", out)
	}
}
