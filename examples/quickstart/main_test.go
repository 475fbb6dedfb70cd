package main

import (
	"strings"
	"testing"
)

func TestQuickstart(t *testing.T) {
	var b strings.Builder
	if err := run(&b); err != nil {
		t.Fatal(err)
	}
	want := "start finetune worker=n[240-247]\n" +
		"start train    launcher=n248 worker=n[192-207]\n" +
		"193 of 2000 GPUs in use\n"
	if b.String() != want {
		t.Fatalf("output:\n%s\nwant:\n%s", b.String(), want)
	}
}
