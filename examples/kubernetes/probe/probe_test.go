package probe

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/kubernetes"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
)

func TestProbe(t *testing.T) {
	cfg := testserver.NewTestConfig(t)
	testserver.RunEtcd(t, cfg)
	sc := storagebackend.NewDefaultConfig("/probe", nil)
	sc.Transport.ServerList = []string{cfg.ListenClientUrls[0].String()}
	srv := kubeapiservertesting.StartTestServerOrDie(t, nil, []string{"--disable-admission-plugins=ServiceAccount"}, sc)
	defer srv.TearDownFn()
	c := kubernetes.NewForConfigOrDie(srv.ClientConfig)
	ns, err := c.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("namespaces: %d", len(ns.Items))
}
