package plugin

// The test harness: a real kube-apiserver (its test server) over an embedded
// etcd, both in this process, and a real kube-scheduler built the way
// cmd/phalanx-scheduler builds it (app.Setup and app.Run with the plugin
// registered through app.WithPlugin), reading a KubeSchedulerConfiguration
// file. Nodes and pods are created through the API; there is no kubelet, so
// a bound pod stays Pending with its nodeName set.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/component-base/compatibility"
	"k8s.io/component-base/configz"
	fwk "k8s.io/kube-scheduler/framework"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// env is one test's control plane.
type env struct {
	t      testing.TB
	ctx    context.Context
	client kubernetes.Interface
	dyn    dynamic.Interface
	plugin *Plugin
	flaky  *flakyBinder
	mu     sync.Mutex
	// election, when set, replaces the configuration's leaderElection
	// body (leaderElect: false) for the scheduler started next.
	election string
}

// schedulerMu serialises schedulers in one process (configz is global).
var schedulerMu sync.Mutex

// startEnv starts etcd, the API server (with the PodGroup CRD installed)
// and the scheduler with the given Phalanx args.
func startEnv(t testing.TB, args string) *env {
	t.Helper()
	e, rc, cancel := startAPI(t)
	e.startScheduler(rc, args, cancel)
	return e
}

// startAPI starts etcd and the API server (with the PodGroup CRD
// installed), and no scheduler: it returns the env, its client
// configuration and the cancel function of the env's context.
func startAPI(t testing.TB) (*env, *restclient.Config, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	etcd := testserver.RunEtcd(t, nil) // free ports picked under the package's lock
	sc := storagebackend.NewDefaultConfig("/"+strings.ReplaceAll(t.Name(), "/", "-"), nil)
	sc.Transport.ServerList = etcd.Endpoints()
	srv := kubeapiservertesting.StartTestServerOrDie(t, nil,
		[]string{"--disable-admission-plugins=ServiceAccount"}, sc)
	t.Cleanup(srv.TearDownFn)
	rc := restclient.CopyConfig(srv.ClientConfig)
	rc.QPS, rc.Burst = 2000, 4000
	e := &env{t: t, ctx: ctx, client: kubernetes.NewForConfigOrDie(rc), dyn: dynamic.NewForConfigOrDie(rc),
		flaky: &flakyBinder{fail: map[string]int{}}}
	e.installCRD(rc)
	return e, rc, cancel
}

// installCRD installs a minimal scheduler-plugins PodGroup CRD.
func (e *env) installCRD(rc *restclient.Config) {
	ac := apiextensionsclient.NewForConfigOrDie(rc)
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "podgroups.scheduling.x-k8s.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "scheduling.x-k8s.io", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "podgroups", Singular: "podgroup", Kind: "PodGroup", ListKind: "PodGroupList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}
	if _, err := ac.ApiextensionsV1().CustomResourceDefinitions().Create(e.ctx, crd, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := e.client.Discovery().ServerResourcesForGroupVersion("scheduling.x-k8s.io/v1alpha1")
		return err == nil, nil
	})
	if err != nil {
		e.t.Fatal("PodGroup CRD not served:", err)
	}
}

const schedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: 2000
  burst: 4000
leaderElection:
  leaderElect: false
profiles:
  - schedulerName: default-scheduler
  - schedulerName: phalanx-scheduler
    plugins:
      multiPoint:
        enabled:
          - name: Phalanx
      bind:
        disabled:
          - name: DefaultBinder
        enabled:
          - name: FlakyBinder
          - name: DefaultBinder
    pluginConfig:
      - name: Phalanx
        args:
%s
`

// writeKubeconfig writes a kubeconfig for rc in dir and returns its path.
func writeKubeconfig(t testing.TB, rc *restclient.Config, dir string) string {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData,
		CertificateAuthority: rc.CAFile, InsecureSkipTLSVerify: rc.Insecure, TLSServerName: rc.ServerName}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{Token: rc.BearerToken, ClientCertificateData: rc.CertData,
		ClientKeyData: rc.KeyData, ClientCertificate: rc.CertFile, ClientKey: rc.KeyFile}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// startScheduler writes a kubeconfig and a KubeSchedulerConfiguration and
// runs kube-scheduler's own Setup and Run with the plugins registered.
func (e *env) startScheduler(rc *restclient.Config, args string, cancel context.CancelFunc) {
	dir := e.t.TempDir()
	kubeconfig := writeKubeconfig(e.t, rc, dir)
	var indented []string
	for _, l := range strings.Split(strings.TrimSpace(args), "\n") {
		indented = append(indented, "          "+l)
	}
	config := filepath.Join(dir, "scheduler.yaml")
	text := fmt.Sprintf(schedulerConfig, kubeconfig, strings.Join(indented, "\n"))
	if e.election != "" {
		text = strings.Replace(text, "  leaderElect: false\n", e.election, 1)
	}
	if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
		e.t.Fatal(err)
	}
	schedulerMu.Lock()
	opts := options.NewOptionsWithComponentGlobalsRegistry(newRegistry(e.t))
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse([]string{"--config=" + config, "--secure-port=0"}); err != nil {
		e.t.Fatal(err)
	}
	factory := func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		p, err := New(ctx, obj, h)
		if err == nil {
			e.mu.Lock()
			e.plugin = p.(*Plugin)
			e.mu.Unlock()
		}
		return p, err
	}
	flaky := func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return e.flaky, nil }
	cc, sched, err := app.Setup(e.ctx, opts, app.WithPlugin(Name, factory), app.WithPlugin(flakyName, flaky))
	if err != nil {
		e.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := app.Run(e.ctx, cc, sched); err != nil && e.ctx.Err() == nil {
			e.t.Error("scheduler:", err)
		}
	}()
	e.t.Cleanup(func() {
		cancel()
		<-done
		configz.Delete("componentconfig")
		schedulerMu.Unlock()
	})
}

func newRegistry(t testing.TB) compatibility.ComponentGlobalsRegistry {
	featureGate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	v := utilcompatibility.DefaultKubeEffectiveVersionForTest()
	v.SetEmulationVersion(featureGate.EmulationVersion())
	v.SetMinCompatibilityVersion(featureGate.MinCompatibilityVersion())
	r := compatibility.NewComponentGlobalsRegistry()
	if err := r.Register(compatibility.DefaultKubeComponent, v, featureGate); err != nil {
		t.Fatal(err)
	}
	return r
}

// ctrl returns the plugin's controller.
func (e *env) ctrl() *controller {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.plugin == nil {
		e.t.Fatal("the Phalanx plugin was not built")
	}
	return e.plugin.c
}

// flakyName is a Bind plugin for tests: it fails the binds of chosen pods a
// set number of times and leaves every other bind to DefaultBinder.
const flakyName = "FlakyBinder"

type flakyBinder struct {
	mu    sync.Mutex
	fail  map[string]int // pod name -> binds still to fail (-1: always)
	seen  map[string]int
	nodes map[string][]string // pod name -> the node of each failed bind
	// gate: pod name -> a condition its bind waits for (polled, up to the
	// tests' patience) before it goes on, so that a bind can be in flight
	// at a chosen moment.
	gate map[string]func() bool
}

func (f *flakyBinder) Name() string { return flakyName }

func (f *flakyBinder) Bind(_ context.Context, _ fwk.CycleState, p *v1.Pod, node string) *fwk.Status {
	f.mu.Lock()
	gate := f.gate[p.Name]
	f.mu.Unlock()
	for end := time.Now().Add(patience); gate != nil && !gate() && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen == nil {
		f.seen, f.nodes = map[string]int{}, map[string][]string{}
	}
	n := f.fail[p.Name]
	if n == 0 {
		return fwk.NewStatus(fwk.Skip)
	}
	if n > 0 {
		f.fail[p.Name] = n - 1
	}
	f.seen[p.Name]++
	f.nodes[p.Name] = append(f.nodes[p.Name], node)
	return fwk.AsStatus(fmt.Errorf("injected bind failure of %s on %s", p.Name, node))
}

func (f *flakyBinder) failures(pod string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[pod]
}

// failedOn returns the nodes of a pod's failed binds, in order.
func (f *flakyBinder) failedOn(pod string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.nodes[pod]...)
}

// clusterSpec lays out GPU nodes like topology.Default2000: nodes of 8 GPUs,
// 16 per leaf (GKE sub-block), 4 leaves per spine (GKE block).
type clusterSpec struct{ nodes int }

func nodeName(i int) string { return fmt.Sprintf("n%03d", i) }

// createNodes creates Ready GPU nodes with GKE topology labels.
func (e *env) createNodes(cs clusterSpec) {
	var wg sync.WaitGroup
	errs := make(chan error, cs.nodes)
	for i := 0; i < cs.nodes; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs <- e.createNode(i)
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *env) createNode(i int) error {
	leaf := i / 16
	res := v1.ResourceList{v1.ResourceCPU: resource.MustParse("64"), v1.ResourceMemory: resource.MustParse("512Gi"),
		v1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("8")}
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName(i), Labels: map[string]string{
		"kubernetes.io/hostname":                 nodeName(i),
		"cloud.google.com/gce-topology-block":    fmt.Sprintf("spine%d", leaf/4),
		"cloud.google.com/gce-topology-subblock": fmt.Sprintf("leaf%02d", leaf),
		"cloud.google.com/gce-topology-host":     "host-" + nodeName(i),
	}}}
	created, err := e.client.CoreV1().Nodes().Create(e.ctx, n, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Status = v1.NodeStatus{Capacity: res, Allocatable: res, Conditions: []v1.NodeCondition{
		{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now()}}}
	updated, err := e.client.CoreV1().Nodes().UpdateStatus(e.ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	// The API server taints a new node not-ready; the node lifecycle
	// controller (not running here) would lift it once the node is Ready.
	updated.Spec.Taints = nil
	_, err = e.client.CoreV1().Nodes().Update(e.ctx, updated, metav1.UpdateOptions{})
	return err
}

// updateNode changes a node's object (labels, taints).
func (e *env) updateNode(name string, change func(*v1.Node)) {
	n, err := e.client.CoreV1().Nodes().Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	change(n)
	if _, err := e.client.CoreV1().Nodes().Update(e.ctx, n, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// setReady sets a node's Ready condition.
func (e *env) setReady(node string, ready bool) {
	n, err := e.client.CoreV1().Nodes().Get(e.ctx, node, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	st := v1.ConditionTrue
	if !ready {
		st = v1.ConditionFalse
	}
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == v1.NodeReady {
			n.Status.Conditions[i].Status = st
		}
	}
	if _, err := e.client.CoreV1().Nodes().UpdateStatus(e.ctx, n, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// createPodGroup creates a scheduler-plugins PodGroup.
func (e *env) createPodGroup(ns, name string, minMember int) {
	pg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"minMember": int64(minMember)},
	}}
	if _, err := e.dyn.Resource(podGroupGVR).Namespace(ns).Create(e.ctx, pg, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) createNamespace(ns string) {
	if _, err := e.client.CoreV1().Namespaces().Create(e.ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// podSpec describes test pods.
type podSpec struct {
	ns, group, scheduler, node string
	gpus                       int
}

func (e *env) newPod(s podSpec, name string) *v1.Pod {
	sched := s.scheduler
	if sched == "" {
		sched = "phalanx-scheduler"
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns, Labels: map[string]string{}},
		Spec: v1.PodSpec{SchedulerName: sched, NodeName: s.node, Containers: []v1.Container{{Name: "c", Image: "train",
			Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")},
				Limits:   v1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(int64(s.gpus), resource.DecimalSI)}}}}}}
	if s.group != "" {
		p.Labels[LabelPodGroup] = s.group
	}
	return p
}

// createPods creates pods concurrently (arrival order is the slice order
// within each worker; interleaving is the caller's choice of order).
func (e *env) createPods(pods []*v1.Pod) {
	var wg sync.WaitGroup
	ch := make(chan *v1.Pod)
	errs := make(chan error, len(pods))
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range ch {
				if _, err := e.client.CoreV1().Pods(p.Namespace).Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
					errs <- err
				}
			}
		}()
	}
	for _, p := range pods {
		ch <- p
	}
	close(ch)
	wg.Wait()
	close(errs)
	for err := range errs {
		e.t.Fatal(err)
	}
}

// pods lists a namespace's pods.
func (e *env) pods(ns string) []v1.Pod {
	l, err := e.client.CoreV1().Pods(ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return l.Items
}

// boundIn counts a namespace's bound pods per group label.
func (e *env) boundIn(ns string) map[string]int {
	out := map[string]int{}
	for _, p := range e.pods(ns) {
		if p.Spec.NodeName != "" {
			out[p.Labels[LabelPodGroup]]++
		}
	}
	return out
}

// waitFor polls cond until it holds or the timeout passes.
func (e *env) waitFor(what string, timeout time.Duration, cond func() bool) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		e.t.Fatalf("timed out after %v waiting for %s\n%s", timeout, what, e.describe())
	}
}

// describe renders the controller's state for a failing test.
func (e *env) describe() string {
	c := e.ctrl()
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "engine started: %v, error: %q, stats: %+v\n", c.eng != nil, c.err, c.stats)
	for _, g := range c.sortedGroups() {
		fmt.Fprintf(&b, "group %s: %d pods, min %d, reason %q", g.key, len(g.pods), g.minMember, g.reason)
		if g.inc != nil {
			fmt.Fprintf(&b, ", job %s admitted %v running %v broken %q slots %d", g.inc.job, g.inc.admitted, g.inc.running, g.inc.broken, len(g.inc.slots))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// engineFree returns the engine's free GPUs and checks its books
// (engineAdapter.check).
func (e *env) engineFree() int {
	c := e.ctrl()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.eng == nil {
		return -1
	}
	if err := c.eng.check(); err != nil {
		e.t.Fatal("engine books:", err)
	}
	return c.eng.freeGPUCount()
}

// condition returns a pod's PodScheduled condition message.
func condition(p *v1.Pod) string { return podCondition(p) }
