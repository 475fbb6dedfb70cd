package main

import (
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/phalanx-sched/phalanx/examples/kubernetes/plugin"
)

// TestDeployConfig checks that deploy/scheduler-config.yaml loads as
// kube-scheduler loads it, delays a standby's informers until it leads,
// enables Phalanx in the phalanx-scheduler profile and carries args the
// plugin accepts.
func TestDeployConfig(t *testing.T) {
	cfg, err := options.LoadConfigFromFile(klog.Background(), "../../deploy/scheduler-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName != "phalanx-scheduler" {
		t.Fatalf("profiles %+v: want one, phalanx-scheduler", cfg.Profiles)
	}
	if !cfg.DelayCacheUntilActive {
		t.Fatal("delayCacheUntilActive is not set: a standby would run informers and Phalanx's engine")
	}
	p := cfg.Profiles[0]
	enabled := false
	for _, pl := range p.Plugins.MultiPoint.Enabled {
		enabled = enabled || pl.Name == plugin.Name
	}
	if !enabled {
		t.Fatal("Phalanx is not enabled in the profile")
	}
	for _, pc := range p.PluginConfig {
		if pc.Name != plugin.Name {
			continue
		}
		var args plugin.Args
		if err := frameworkruntime.DecodeInto(pc.Args, &args); err != nil {
			t.Fatal(err)
		}
		if err := args.Validate(); err != nil {
			t.Fatal(err)
		}
		if args.Topology != "gke" || args.MaxBindAttempts != 3 {
			t.Fatalf("args %+v do not match the file", args)
		}
		return
	}
	t.Fatal("no pluginConfig for Phalanx")
}

// TestCommand builds the scheduler command the way main does.
func TestCommand(t *testing.T) {
	cmd := app.NewSchedulerCommand(app.WithPlugin(plugin.Name, plugin.New))
	if cmd.Use != "kube-scheduler" || cmd.Flags().Lookup("config") == nil {
		t.Fatalf("unexpected command %q", cmd.Use)
	}
}
