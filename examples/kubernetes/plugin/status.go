package plugin

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

func dynamicClient(cfg *restclient.Config) (dynamic.Interface, error) {
	return dynamic.NewForConfig(cfg)
}

// statusUpdate sets a pending pod's PodScheduled condition message.
type statusUpdate struct {
	ns, name, uid, msg string
}

// statusWriter patches the PodScheduled condition of pods Phalanx holds, so
// that `kubectl describe pod` shows the engine's reason. Gated pods never
// reach the framework's failure handler, which does this for rejected pods.
// The cycle asks only for pods whose condition differs; it writes from one
// goroutine, the latest message per pod.
type statusWriter struct {
	client kubernetes.Interface
	mu     sync.Mutex
	want   map[string]statusUpdate // by UID
	wake   chan struct{}
}

func newStatusWriter(c kubernetes.Interface) *statusWriter {
	return &statusWriter{client: c, want: map[string]statusUpdate{}, wake: make(chan struct{}, 1)}
}

func (w *statusWriter) enqueue(us []statusUpdate) {
	if len(us) == 0 {
		return
	}
	w.mu.Lock()
	for _, u := range us {
		w.want[u.uid] = u
	}
	w.mu.Unlock()
	{
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

func (w *statusWriter) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		}
		w.mu.Lock()
		batch := w.want
		w.want = map[string]statusUpdate{}
		w.mu.Unlock()
		for _, u := range batch {
			if ctx.Err() != nil {
				return
			}
			if err := w.patch(ctx, u); err != nil {
				klog.FromContext(ctx).V(2).Info("Phalanx: writing a pod's condition", "pod", u.ns+"/"+u.name, "err", err)
			}
		}
	}
}

func (w *statusWriter) patch(ctx context.Context, u statusUpdate) error {
	cond := v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable,
		Message: u.msg, LastTransitionTime: metav1.NewTime(time.Now())}
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": u.uid},
		"status":   map[string]any{"conditions": []v1.PodCondition{cond}}})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = w.client.CoreV1().Pods(u.ns).Patch(ctx, u.name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
	return err
}
