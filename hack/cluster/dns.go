package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Cluster DNS: CoreDNS (built from the Go module proxy by hack/cluster-up.sh and imported as
// corednsImage) runs as a Deployment behind the conventional kube-dns Service, so in-cluster
// clients resolve <service>.<namespace>.svc.cluster.local like on any cluster.
const (
	clusterDNSIP = "10.96.0.10"
	corednsImage = "registry.k8s.io/coredns/coredns:v1.15.0"
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

func corednsObjects() []struct{ path, body string } {
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
		{"/apis/apps/v1/namespaces/kube-system/deployments", map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "coredns", "namespace": "kube-system", "labels": labels},
			"spec": map[string]any{
				"replicas": 1,
				"selector": map[string]any{"matchLabels": labels},
				"template": map[string]any{
					"metadata": map[string]any{"labels": labels},
					"spec": map[string]any{
						"serviceAccountName": "coredns",
						"priorityClassName":  "system-cluster-critical",
						"dnsPolicy":          "Default",
						"containers": []any{map[string]any{
							"name": "coredns", "image": corednsImage, "imagePullPolicy": "IfNotPresent",
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
					},
				},
			}}},
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
	out := make([]struct{ path, body string }, 0, len(objs))
	for _, o := range objs {
		b, err := json.Marshal(o.obj)
		if err != nil {
			panic(err) // static data; cannot fail
		}
		out = append(out, struct{ path, body string }{o.path, string(b)})
	}
	return out
}

// ensureCoreDNS creates the CoreDNS objects (an existing object is left as it is: etcd is
// wiped by down, so a running cluster already has the ones this version creates) and waits
// for the Deployment to be ready.
func (c *cluster) ensureCoreDNS(ctx context.Context) error {
	tr := &http.Transport{TLSClientConfig: c.adminTLS(), Proxy: nil}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for _, o := range corednsObjects() {
		// Look first: creating an existing Service fails with 422 (its ClusterIP is taken),
		// not 409.
		var meta struct {
			Metadata struct{ Name string } `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(o.body), &meta); err != nil {
			return err
		}
		if code, _, err := c.get(ctx, c.apiURL()+o.path+"/"+meta.Metadata.Name, c.adminTLS()); err == nil && code == http.StatusOK {
			continue
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.apiURL()+o.path, bytes.NewBufferString(o.body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("creating %s: %w", o.path, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusConflict {
			return fmt.Errorf("creating %s: HTTP %d: %.300s", o.path, resp.StatusCode, body)
		}
	}
	c.logf("coredns: waiting for the Deployment to be ready (Service kube-dns %s)", clusterDNSIP)
	var last string
	ok := pollUntil(ctx, 3*time.Minute, time.Second, func() bool {
		code, body, err := c.get(ctx, c.apiURL()+"/apis/apps/v1/namespaces/kube-system/deployments/coredns", c.adminTLS())
		if err != nil || code != http.StatusOK {
			last = fmt.Sprintf("%v HTTP %d", err, code)
			return false
		}
		var d struct {
			Status struct {
				ReadyReplicas int `json:"readyReplicas"`
			} `json:"status"`
		}
		if err := json.Unmarshal(body, &d); err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("%d ready replicas", d.Status.ReadyReplicas)
		return d.Status.ReadyReplicas >= 1
	})
	if !ok {
		return fmt.Errorf("coredns not ready within 3m (%s); kubelet log tail:\n%s", last, tail(c.logFile("kubelet"), 30))
	}
	c.logf("coredns: ready")
	return nil
}
