package main

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// removeAllPods stops and removes every pod sandbox of node n through the CRI, the same calls the
// kubelet makes: containerd then runs the CNI DEL that deletes the pod's veth, its IP
// allocation and its network namespace, instead of leaving them for the sweep.
func (c *cluster) removeAllPods(ctx context.Context, n node) error {
	conn, err := grpc.NewClient("unix://"+n.containerdSock(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pods, err := rt.ListPodSandbox(lctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("listing pod sandboxes: %w", err)
	}
	var firstErr error
	for _, p := range pods.GetItems() {
		c.logf("containerd: removing pod %s/%s", p.GetMetadata().GetNamespace(), p.GetMetadata().GetName())
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if _, err := rt.StopPodSandbox(sctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.GetId()}); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("stopping pod sandbox %s: %w", p.GetId(), err)
		}
		if _, err := rt.RemovePodSandbox(sctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.GetId()}); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("removing pod sandbox %s: %w", p.GetId(), err)
		}
		cancel()
	}
	return firstErr
}
