package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const smallTrace = `job_id,user,submit_s,duration_s,gpus
0,0,0,3600,8
1,1,10,600,1
2,0,20,7200,64
3,2,30,1800,16
4,1,40,60,2
5,2,50,3600,128
`

func TestReplay(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.csv")
	if err := os.WriteFile(trace, []byte(smallTrace), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "topology.conf")
	if err := os.WriteFile(conf, []byte("SwitchName=s0 Nodes=n[0-15]\nSwitchName=s1 Nodes=n[16-31]\nSwitchName=top Switches=s[0-1]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"default cluster, all policies", []string{"-trace", trace, "-quiet"},
			[]string{"trace t (6 jobs), cluster default-2k (2000 GPUs), load factor 1, seed 1", "\npod-by-pod ", "\ngang-fifo ", "\ngang-backfill ", "\nphalanx "}},
		{"topology.conf and placements", []string{"-trace", trace, "-topology", conf, "-policies", "phalanx", "-placements", "leaf-pack,first-fit,random", "-quiet"},
			[]string{"cluster topology.conf (256 GPUs)", "leaf-pack", "first-fit", "random"}},
		{"json", []string{"-trace", trace, "-topology", "fattree:2,2,8,8", "-policies", "gang-fifo", "-json", "-quiet"},
			[]string{`"policy": "gang-fifo"`, `"jobs": 6`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errs strings.Builder
			if err := run(tt.args, &out, &errs); err != nil {
				t.Fatalf("%v\n%s", err, errs.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
	t.Run("bad files name the line", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.csv")
		_ = os.WriteFile(bad, []byte("job_id,user,submit_s,duration_s,gpus\n0,0,0,60,1\n1,0,x,60,1\n"), 0o644)
		var out, errs strings.Builder
		err := run([]string{"-trace", bad, "-quiet"}, &out, &errs)
		if err == nil || !strings.Contains(err.Error(), "bad.csv:3: column submit_s") {
			t.Fatalf("bad trace: %v", err)
		}
		badConf := filepath.Join(dir, "bad.conf")
		_ = os.WriteFile(badConf, []byte("SwitchName=s0 Nodes=n[0-3]\nSwitchName=s1 Nodes=n[3-4]\n"), 0o644)
		err = run([]string{"-trace", trace, "-topology", badConf, "-quiet"}, &out, &errs)
		if err == nil || !strings.Contains(err.Error(), "bad.conf:2") {
			t.Fatalf("bad topology: %v", err)
		}
	})
}
