//go:build ignore

// Command kube-network-policies is the NetworkPolicy agent of the local cluster:
// sigs.k8s.io/kube-network-policies's controller (its pkg/networkpolicy, at the version in
// hack/versions.env) behind a main of our own, because the upstream main only reads
// in-cluster credentials and this agent runs on the host beside kube-proxy, with a
// kubeconfig. hack/cluster-up.sh copies this file into a wrapper module and builds it from
// the Go module proxy; the build tag keeps it out of the operator's module.
//
// Admin and baseline admin network policies stay off (alpha, and nothing here uses them).
// NRI stays on, as upstream's main leaves it: with it off, v0.8.0 dereferences the missing
// plugin for every address that is no pod's (the node's, the internet's) and crashes. Here
// containerd 1.6 has no NRI socket, so the plugin never connects, logs that once, and pod
// addresses come from the API server only.
//
// -cleanup deletes the agent's nftables table and exits; -check-clean exits 1, naming it,
// if the table exists. The cluster tool runs them on down and verify-clean: this host has
// no nft binary, and the library the agent already links is the one that made the table.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/nftables"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"
)

// tableName is the agent's nftables table (inet family), the library's default.
const tableName = "kube-network-policies"

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the agent's identity (required)")
	nodeName := flag.String("hostname-override", "", "the node whose pods this agent enforces for (required)")
	queueID := flag.Int("nfqueue-id", 98, "nfqueue number the host's rules send new pod connections to")
	metrics := flag.String("metrics-bind-address", "127.0.0.1:9080", "address of the /metrics endpoint")
	bug1766 := flag.Bool("netfilter-bug-1766-fix", false, "queue DNS in PREROUTING (kernels before 6.12 only)")
	cleanup := flag.Bool("cleanup", false, "delete the agent's nftables table and exit")
	checkClean := flag.Bool("check-clean", false, "exit 1 if the agent's nftables table exists")
	klog.InitFlags(nil)
	flag.Parse()

	switch {
	case *cleanup:
		exitOn(deleteTable())
		return
	case *checkClean:
		exitOn(checkTable())
		return
	}
	if *kubeconfig == "" || *nodeName == "" {
		exitOn(errors.New("-kubeconfig and -hostname-override are required"))
	}
	exitOn(run(*kubeconfig, networkpolicy.Config{
		FailOpen:            false,
		QueueID:             *queueID,
		NodeName:            *nodeName,
		NetfilterBug1766Fix: *bug1766,
		NFTableName:         tableName,
		NRIdisabled:         false,
	}, *metrics))
}

func run(kubeconfig string, cfg networkpolicy.Config, metrics string) error {
	// SIGTERM too (upstream listens for SIGINT only): the cluster tool stops components with
	// SIGTERM, and the controller deletes its table on the way out.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("reading %s: %w", kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	ctrl, err := networkpolicy.NewController(client,
		factory.Networking().V1().NetworkPolicies(),
		factory.Core().V1().Namespaces(),
		factory.Core().V1().Pods(),
		nil, nil, nil, nil, cfg)
	if err != nil {
		return fmt.Errorf("network policy controller: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.Handler())
	srv := &http.Server{Addr: metrics, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "metrics server")
		}
	}()
	factory.Start(ctx.Done())
	errc := make(chan error, 1)
	go func() { errc <- ctrl.Run(ctx) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
		err = <-errc
	}
	_ = srv.Close()
	return err
}

func deleteTable() error {
	conn, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	present, err := tablePresent(conn)
	if err != nil || !present {
		return err
	}
	conn.DelTable(&nftables.Table{Name: tableName, Family: nftables.TableFamilyINet})
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("deleting table inet %s: %w", tableName, err)
	}
	return nil
}

func checkTable() error {
	conn, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	present, err := tablePresent(conn)
	if err == nil && present {
		err = fmt.Errorf("nftables table inet %s remains", tableName)
	}
	return err
}

func tablePresent(conn *nftables.Conn) (bool, error) {
	tables, err := conn.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return false, fmt.Errorf("listing nftables tables: %w", err)
	}
	for _, t := range tables {
		if t.Name == tableName {
			return true, nil
		}
	}
	return false, nil
}

func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube-network-policies:", err)
		os.Exit(1)
	}
}
