// Command phalanx-scheduler is kube-scheduler with the Phalanx plugin
// compiled in (the out-of-tree plugin pattern). It takes every kube-scheduler
// flag; enable the plugin in a profile of its --config (see
// deploy/scheduler-config.yaml and the README).
//
//	phalanx-scheduler --config deploy/scheduler-config.yaml --kubeconfig ~/.kube/config
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/phalanx-sched/phalanx/examples/kubernetes/plugin"
)

func main() {
	cmd := app.NewSchedulerCommand(app.WithPlugin(plugin.Name, plugin.New))
	os.Exit(cli.Run(cmd))
}
