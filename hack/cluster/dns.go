package main

import (
	"context"
	"fmt"
	"time"
)

// Cluster DNS: CoreDNS (built from the Go module proxy by hack/cluster-up.sh and imported
// under the -coredns-image name) runs as a Deployment behind the conventional kube-dns
// Service, so in-cluster clients resolve <service>.<namespace>.svc.cluster.local like on any
// cluster.
const (
	clusterDNSIP = "10.96.0.10"
	// corednsPort is unprivileged so the container needs no NET_BIND_SERVICE; the Service
	// maps 53 to it.
	corednsPort = 1053
)

// corefile serves the cluster zone from the API and forwards the rest to the node's resolver.
// No "loop" plugin: the machine's resolver may be unreachable (no internet), and a detected
// loop would crash the pod instead of just failing outside names.
var corefile = fmt.Sprintf(`.:%d {
    errors
    health :8080
    ready :8181
    kubernetes %s in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    forward . /etc/resolv.conf
    cache 30
    reload
    loadbalance
}
`, corednsPort, clusterDomain)

// corednsObjects are the objects of cluster DNS, running image.
func corednsObjects(image string) []apiObject {
	labels := map[string]string{"k8s-app": "kube-dns"}
	objs := []struct {
		path string
		obj  any
	}{
		{"/api/v1/namespaces/kube-system/serviceaccounts", map[string]any{
			"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "coredns", "namespace": "kube-system"}}},
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles", map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": "system:coredns"},
			"rules": []any{
				map[string]any{"apiGroups": []string{""}, "resources": []string{"endpoints", "services", "pods", "namespaces"}, "verbs": []string{"list", "watch"}},
				map[string]any{"apiGroups": []string{"discovery.k8s.io"}, "resources": []string{"endpointslices"}, "verbs": []string{"list", "watch"}},
			}}},
		{"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": "system:coredns"},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:coredns"},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "coredns", "namespace": "kube-system"}}}},
		{"/api/v1/namespaces/kube-system/configmaps", map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "coredns", "namespace": "kube-system"},
			"data": map[string]string{"Corefile": corefile}}},
		{"/apis/apps/v1/namespaces/kube-system/deployments", oneReplicaDeployment("kube-system", "coredns", labels, map[string]any{
			"serviceAccountName": "coredns",
			"priorityClassName":  "system-cluster-critical",
			// On the first node, which cut-node refuses: the one replica of the cluster's DNS on
			// a node a spec cuts took every pod's name lookups with it until the node's pods were
			// evicted (minutes), and the three-node specs failed whenever it had been scheduled
			// there rather than on the node they meant to lose.
			"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
				"nodeSelectorTerms": []any{map[string]any{"matchFields": []any{map[string]any{
					"key": "metadata.name", "operator": "In", "values": []string{nodeName},
				}}}},
			}}},
			"dnsPolicy": "Default",
			"containers": []any{map[string]any{
				"name": "coredns", "image": image, "imagePullPolicy": "IfNotPresent",
				"args": []string{"-conf", "/etc/coredns/Corefile"},
				"ports": []any{
					map[string]any{"name": "dns", "containerPort": corednsPort, "protocol": "UDP"},
					map[string]any{"name": "dns-tcp", "containerPort": corednsPort, "protocol": "TCP"},
				},
				"readinessProbe": map[string]any{"httpGet": map[string]any{"path": "/ready", "port": 8181}, "periodSeconds": 2},
				"livenessProbe":  map[string]any{"httpGet": map[string]any{"path": "/health", "port": 8080}, "periodSeconds": 10, "failureThreshold": 5},
				"volumeMounts":   []any{map[string]any{"name": "config", "mountPath": "/etc/coredns", "readOnly": true}},
				"securityContext": map[string]any{
					"runAsNonRoot": true, "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
					"capabilities": map[string]any{"drop": []string{"ALL"}},
				},
			}},
			"volumes": []any{map[string]any{"name": "config", "configMap": map[string]any{"name": "coredns"}}},
		})},
		{"/api/v1/namespaces/kube-system/services", map[string]any{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": "kube-dns", "namespace": "kube-system", "labels": labels},
			"spec": map[string]any{
				"clusterIP": clusterDNSIP, "selector": labels,
				"ports": []any{
					map[string]any{"name": "dns", "port": 53, "targetPort": corednsPort, "protocol": "UDP"},
					map[string]any{"name": "dns-tcp", "port": 53, "targetPort": corednsPort, "protocol": "TCP"},
				},
			}}},
	}
	return toAPIObjects(objs)
}

// ensureCoreDNS creates the CoreDNS objects that are missing and waits for the Deployment
// to be ready.
func (c *cluster) ensureCoreDNS(ctx context.Context) error {
	if err := c.ensureObjects(ctx, corednsObjects(c.images.coredns)); err != nil {
		return err
	}
	c.logf("coredns: waiting for the Deployment to be ready (Service kube-dns %s)", clusterDNSIP)
	if err := c.waitDeploymentReady(ctx, "kube-system", "coredns", 3*time.Minute); err != nil {
		return err
	}
	c.logf("coredns: ready")
	return nil
}
