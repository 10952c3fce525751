package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLocalPathObjects checks the facts the e2e suite and the operator rely on, without a
// cluster: local-path is the default class, binds on first consumer and deletes the
// directory with the claim; the helper pod uses the helper image (the one with a shell); the
// volumes live inside the state directory.
func TestLocalPathObjects(t *testing.T) {
	c := &cluster{dir: "/var/tmp/mao-test", images: clusterImages{localPath: "example.com/lpp:v1", localPathHelper: "example.com/sh:1"}}
	kinds := map[string]map[string]any{}
	for _, o := range c.localPathObjects() {
		var obj map[string]any
		if err := json.Unmarshal([]byte(o.body), &obj); err != nil {
			t.Fatalf("%s: %v", o.path, err)
		}
		kind, _ := obj["kind"].(string)
		if !strings.HasSuffix(o.path, strings.ToLower(kind)+"s") && !strings.HasSuffix(o.path, "classes") {
			t.Errorf("%s posted to %s", kind, o.path)
		}
		kinds[kind] = obj
	}
	sc := kinds["StorageClass"]
	if sc == nil {
		t.Fatal("no StorageClass")
	}
	ann := sc["metadata"].(map[string]any)["annotations"].(map[string]any)
	if ann["storageclass.kubernetes.io/is-default-class"] != "true" || sc["volumeBindingMode"] != "WaitForFirstConsumer" ||
		sc["reclaimPolicy"] != "Delete" || sc["provisioner"] != localPathProvisioner {
		t.Errorf("StorageClass %v", sc)
	}
	data := kinds["ConfigMap"]["data"].(map[string]any)
	var helper struct {
		Spec struct {
			Containers []struct {
				Image           string
				SecurityContext struct{ RunAsUser *int64 }
			}
		}
	}
	if err := json.Unmarshal([]byte(data["helperPod.yaml"].(string)), &helper); err != nil {
		t.Fatal(err)
	}
	if len(helper.Spec.Containers) != 1 || helper.Spec.Containers[0].Image != "example.com/sh:1" ||
		helper.Spec.Containers[0].SecurityContext.RunAsUser == nil || *helper.Spec.Containers[0].SecurityContext.RunAsUser != 0 {
		t.Errorf("helper pod %+v", helper)
	}
	if !strings.Contains(data["config.json"].(string), `"/var/tmp/mao-test/local-path"`) {
		t.Errorf("config.json %s does not put volumes under the state directory", data["config.json"])
	}
	for _, k := range []string{"setup", "teardown"} {
		if !strings.HasPrefix(data[k].(string), "#!/bin/sh\n") || !strings.Contains(data[k].(string), `"$VOL_DIR"`) {
			t.Errorf("%s script %q", k, data[k])
		}
	}
	dep, _ := json.Marshal(kinds["Deployment"])
	if !strings.Contains(string(dep), `"example.com/lpp:v1"`) || !strings.Contains(string(dep), `"readOnlyRootFilesystem":true`) {
		t.Errorf("Deployment %s", dep)
	}
}

func TestClusterImagesCheck(t *testing.T) {
	full := clusterImages{pause: "p", coredns: "c", localPath: "l", localPathHelper: "h"}
	if err := full.check(); err != nil {
		t.Fatal(err)
	}
	missing := full
	missing.localPathHelper = ""
	if err := missing.check(); err == nil || !strings.Contains(err.Error(), "-local-path-helper-image") {
		t.Fatalf("err = %v, want it to name -local-path-helper-image", err)
	}
}
