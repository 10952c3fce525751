package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"
)

// Dynamic provisioning: Rancher's local-path-provisioner (built from the Go module proxy by
// hack/cluster-up.sh) watches PersistentVolumeClaims of the default StorageClass "local-path"
// and, once the scheduler has picked the node (WaitForFirstConsumer), starts a helper pod that
// creates a directory under localPathDir and then a hostPath PersistentVolume for it; when
// the claim is deleted (reclaim policy Delete) another helper pod removes the directory. It
// is what a PVC on a kind or k3s cluster gets, so the operator's SQLite adapters run here with
// the volume they get on a user's cluster.
const (
	localPathNamespace   = "local-path-storage"
	localPathSA          = "local-path-provisioner-service-account"
	localPathProvisioner = "rancher.io/local-path"
	localPathClass       = "local-path"
	// localPathDir is the volumes' root, relative to the state directory: inside it so
	// cluster down removes it and nothing of the cluster lands in the host's /opt.
	localPathDir = "local-path"
)

// localPathScripts are what the helper pods run with /bin/sh: $VOL_DIR is the volume's
// directory as the helper sees it (the provisioner sets it). 0777 because the pods that use a
// volume run as any non-root user; the directory itself is reachable only through the state
// directory's own permissions on the host.
const (
	localPathSetup    = "#!/bin/sh\nset -eu\nmkdir -m 0777 -p \"$VOL_DIR\"\n"
	localPathTeardown = "#!/bin/sh\nset -eu\nrm -rf \"$VOL_DIR\"\n"
)

// localPathHelperPod is the helper pod template the provisioner fills in (command, volumes,
// node). It runs as root, the one pod of the cluster that does: it creates and deletes
// directories on the node's disk that pods of any user wrote into, as upstream's helper does.
// The image's own user stays the non-root default of hack/images.
func localPathHelperPod(image string) string {
	pod := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "helper-pod"},
		"spec": map[string]any{
			"containers": []any{map[string]any{
				"name": "helper-pod", "image": image, "imagePullPolicy": "IfNotPresent",
				"securityContext": map[string]any{"runAsUser": 0, "runAsGroup": 0, "runAsNonRoot": false},
			}},
		},
	}
	b, err := json.Marshal(pod) // JSON is YAML: the provisioner parses it with a YAML decoder
	if err != nil {
		panic(err) // static data; cannot fail
	}
	return string(b)
}

// localPathConfig is the provisioner's config.json: one path for every node.
func (c *cluster) localPathConfig() string {
	b, err := json.Marshal(map[string]any{
		"nodePathMap": []any{map[string]any{
			"node":  "DEFAULT_PATH_FOR_NON_LISTED_NODES",
			"paths": []string{filepath.Join(c.dir, localPathDir)},
		}},
	})
	if err != nil {
		panic(err) // static data; cannot fail
	}
	return string(b)
}

// localPathObjects are the provisioner's namespace, identity, permissions, configuration,
// Deployment and the default StorageClass, as upstream's deploy/local-path-storage.yaml has
// them, with this cluster's images, paths and a hardened provisioner container.
func (c *cluster) localPathObjects() []apiObject {
	ns := localPathNamespace
	labels := map[string]string{"app": "local-path-provisioner"}
	ref := func(kind, name string) map[string]any {
		return map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name}
	}
	subjects := []any{map[string]any{"kind": "ServiceAccount", "name": localPathSA, "namespace": ns}}
	return toAPIObjects([]struct {
		path string
		obj  any
	}{
		{"/api/v1/namespaces", map[string]any{
			"apiVersion": "v1", "kind": "Namespace",
			// Helper pods mount the node's disk and run as root: privileged, said out loud.
			"metadata": map[string]any{"name": ns, "labels": map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}}},
		{"/api/v1/namespaces/" + ns + "/serviceaccounts", map[string]any{
			"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": localPathSA, "namespace": ns}}},
		{"/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/roles", map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
			"metadata": map[string]any{"name": "local-path-provisioner-role", "namespace": ns},
			"rules": []any{
				// The helper pods live in the provisioner's own namespace.
				map[string]any{"apiGroups": []string{""}, "resources": []string{"pods"}, "verbs": []string{"get", "list", "watch", "create", "patch", "update", "delete"}},
			}}},
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles", map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
			"metadata": map[string]any{"name": "local-path-provisioner-role"},
			"rules": []any{
				map[string]any{"apiGroups": []string{""}, "resources": []string{"nodes", "persistentvolumeclaims", "configmaps", "pods", "pods/log"}, "verbs": []string{"get", "list", "watch"}},
				map[string]any{"apiGroups": []string{""}, "resources": []string{"persistentvolumes"}, "verbs": []string{"get", "list", "watch", "create", "patch", "update", "delete"}},
				map[string]any{"apiGroups": []string{""}, "resources": []string{"events"}, "verbs": []string{"create", "patch"}},
				map[string]any{"apiGroups": []string{"storage.k8s.io"}, "resources": []string{"storageclasses"}, "verbs": []string{"get", "list", "watch"}},
			}}},
		{"/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/rolebindings", map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
			"metadata": map[string]any{"name": "local-path-provisioner-bind", "namespace": ns},
			"roleRef":  ref("Role", "local-path-provisioner-role"), "subjects": subjects}},
		{"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
			"metadata": map[string]any{"name": "local-path-provisioner-bind"},
			"roleRef":  ref("ClusterRole", "local-path-provisioner-role"), "subjects": subjects}},
		{"/api/v1/namespaces/" + ns + "/configmaps", map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "local-path-config", "namespace": ns},
			"data": map[string]string{
				"config.json":    c.localPathConfig(),
				"setup":          localPathSetup,
				"teardown":       localPathTeardown,
				"helperPod.yaml": localPathHelperPod(c.images.localPathHelper),
			}}},
		{"/apis/apps/v1/namespaces/" + ns + "/deployments", oneReplicaDeployment(ns, "local-path-provisioner", labels, map[string]any{
			"serviceAccountName": localPathSA,
			"priorityClassName":  "system-cluster-critical",
			"containers": []any{map[string]any{
				"name": "local-path-provisioner", "image": c.images.localPath, "imagePullPolicy": "IfNotPresent",
				"command": []string{"/usr/bin/local-path-provisioner", "--debug", "start",
					"--config", "/etc/config/config.json",
					"--service-account-name", localPathSA,
					"--provisioner-name", localPathProvisioner,
					"--helper-image", c.images.localPathHelper},
				"env": []any{
					map[string]any{"name": "POD_NAMESPACE", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.namespace"}}},
					// The provisioner re-reads config.json and helperPod.yaml here when the
					// ConfigMap changes.
					map[string]any{"name": "CONFIG_MOUNT_PATH", "value": "/etc/config/"},
				},
				"volumeMounts": []any{
					map[string]any{"name": "config", "mountPath": "/etc/config", "readOnly": true},
					map[string]any{"name": "tmp", "mountPath": "/tmp"},
				},
				// The provisioner only talks to the API server; the helper pods do the
				// disk work, so it runs as hardened as the operator's own pods.
				"securityContext": map[string]any{
					"runAsNonRoot": true, "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
					"capabilities":   map[string]any{"drop": []string{"ALL"}},
					"seccompProfile": map[string]any{"type": "RuntimeDefault"},
				},
			}},
			"volumes": []any{
				map[string]any{"name": "config", "configMap": map[string]any{"name": "local-path-config"}},
				// klog may write files under /tmp; the root filesystem is read-only.
				map[string]any{"name": "tmp", "emptyDir": map[string]any{}},
			},
		})},
		{"/apis/storage.k8s.io/v1/storageclasses", map[string]any{
			"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
			"metadata": map[string]any{"name": localPathClass, "annotations": map[string]string{
				// PVCs without storageClassName get this class (DefaultStorageClass admission).
				"storageclass.kubernetes.io/is-default-class": "true",
			}},
			"provisioner": localPathProvisioner,
			// The volume is a directory on one node: bind it only once the pod's node is known.
			"volumeBindingMode": "WaitForFirstConsumer",
			"reclaimPolicy":     "Delete",
		}},
	})
}

// ensureLocalPath installs the provisioner and the default StorageClass and waits for the
// provisioner to run.
func (c *cluster) ensureLocalPath(ctx context.Context) error {
	if err := c.ensureObjects(ctx, c.localPathObjects()); err != nil {
		return fmt.Errorf("installing local-path-provisioner: %w", err)
	}
	c.logf("local-path-provisioner: waiting for the Deployment to be ready (default StorageClass %s, volumes under %s)",
		localPathClass, filepath.Join(c.dir, localPathDir))
	if err := c.waitDeploymentReady(ctx, localPathNamespace, "local-path-provisioner", 3*time.Minute); err != nil {
		return err
	}
	c.logf("local-path-provisioner: ready")
	return nil
}
