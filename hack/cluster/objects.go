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

// apiObject is one object the cluster tool creates through the API: the collection path it
// is POSTed to and its JSON body.
type apiObject struct {
	path string
	body string
}

// toAPIObjects marshals static object literals; they are the tool's own data, so a failure is
// a programming error.
func toAPIObjects(objs []struct {
	path string
	obj  any
}) []apiObject {
	out := make([]apiObject, 0, len(objs))
	for _, o := range objs {
		b, err := json.Marshal(o.obj)
		if err != nil {
			panic(err) // static data; cannot fail
		}
		out = append(out, apiObject{o.path, string(b)})
	}
	return out
}

// ensureObjects creates each object that does not exist yet. An existing object is left as
// it is: etcd is wiped by down, so a running cluster already has the ones this version
// creates, and an up on a running cluster must not fight a user's edits.
func (c *cluster) ensureObjects(ctx context.Context, objs []apiObject) error {
	tr := &http.Transport{TLSClientConfig: c.adminTLS(), Proxy: nil}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for _, o := range objs {
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
			return fmt.Errorf("creating %s/%s: %w", o.path, meta.Metadata.Name, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusConflict {
			return fmt.Errorf("creating %s/%s: HTTP %d: %.300s", o.path, meta.Metadata.Name, resp.StatusCode, body)
		}
	}
	return nil
}

// waitDeploymentReady polls a Deployment until at least one replica is ready.
func (c *cluster) waitDeploymentReady(ctx context.Context, namespace, name string, d time.Duration) error {
	var last string
	ok := pollUntil(ctx, d, time.Second, func() bool {
		code, body, err := c.get(ctx, c.apiURL()+"/apis/apps/v1/namespaces/"+namespace+"/deployments/"+name, c.adminTLS())
		if err != nil || code != http.StatusOK {
			last = fmt.Sprintf("%v HTTP %d", err, code)
			return false
		}
		var dep struct {
			Status struct {
				ReadyReplicas int `json:"readyReplicas"`
			} `json:"status"`
		}
		if err := json.Unmarshal(body, &dep); err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("%d ready replicas", dep.Status.ReadyReplicas)
		return dep.Status.ReadyReplicas >= 1
	})
	if !ok {
		return fmt.Errorf("deployment %s/%s not ready within %s (%s); kubelet log tail:\n%s", namespace, name, d, last, tail(c.logFile("kubelet"), 30))
	}
	return nil
}

// oneReplicaDeployment is a Deployment of one pod labelled (and selected) by labels; the
// cluster's own add-ons (DNS, storage) each run one.
func oneReplicaDeployment(namespace, name string, labels map[string]string, podSpec map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": namespace, "labels": labels},
		"spec": map[string]any{
			"replicas": 1,
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{"metadata": map[string]any{"labels": labels}, "spec": podSpec},
		},
	}
}
