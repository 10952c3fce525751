package chart

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestComparisonCatchesAOneSidedChange proves that the comparison can fail: starting from the
// real default renderings of both installers (equal, as TestChartMatchesKustomizeInstaller
// requires), each case changes one side alone, the way an edit to config/ or to the chart
// would, and the comparison must report a difference naming that object and field. The
// normalizations must not swallow anything but what they document.
func TestComparisonCatchesAOneSidedChange(t *testing.T) {
	t.Parallel()
	k := renderKustomize(t, renderKustomizeArgs{base: "config/default"})
	c := renderChart(t, renderChartArgs{namespace: defaultNamespace})
	cmp := comparison{onlyInChart: pdbOnlyInChart, onlyInKustomize: namespaceOnlyInKustomize}
	if diffs := compareInstalls(k, c, cmp); len(diffs) > 0 {
		t.Fatalf("the unchanged renderings already differ, so no case below would prove anything:\n  %s", strings.Join(diffs, "\n  "))
	}
	const prefix = "memory-adapter-operator-"
	cases := []struct {
		name string
		// onChart: the change is made to the chart's rendering, else to kustomize's.
		onChart bool
		kind    string
		objName string
		edit    func(t *testing.T, o *unstructured.Unstructured)
		// want is a fragment the reported difference must contain.
		want string
	}{{
		name: "one character of a policy's CEL (the manager's user)", onChart: true,
		kind: "ValidatingAdmissionPolicy", objName: prefix + "manager-secrets",
		edit: replaceInExpression("is-the-manager", "controller-manager", "controller-managex", "spec", "matchConditions"),
		want: "spec.matchConditions[0].expression",
	}, {
		name: "one character of a policy variable's CEL (the prefix)", onChart: false,
		kind: "ValidatingAdmissionPolicy", objName: prefix + "manager-configmaps",
		edit: replaceInExpression("installPrefix", "operator-", "operator_", "spec", "variables"),
		want: "spec.variables[1].expression",
	}, {
		name: "a gate name in CEL whose blank lines kustomize doubles (the fold allowance is whitespace only)", onChart: false,
		kind: "ValidatingAdmissionPolicy", objName: prefix + "manager-pods",
		edit: func(t *testing.T, o *unstructured.Unstructured) {
			editListItem(t, o, "gatesOnlyLoseOurs", func(m map[string]any) {
				if !strings.Contains(m["expression"].(string), "\n\n") {
					t.Fatalf("kustomize no longer doubles this expression's line break, so the case proves less: %q", m["expression"])
				}
			}, "spec", "variables")
			replaceInExpression("gatesOnlyLoseOurs", "g.name != ", "g.name == ", "spec", "variables")(t, o)
		},
		want: "spec.variables[2].expression",
	}, {
		name: "a policy binding warns instead of denying", onChart: true,
		kind: "ValidatingAdmissionPolicyBinding", objName: prefix + "manager-pods",
		edit: func(t *testing.T, o *unstructured.Unstructured) {
			must(t, unstructured.SetNestedStringSlice(o.Object, []string{"Warn"}, "spec", "validationActions"))
		},
		want: "spec.validationActions[0]",
	}, {
		name: "a verb added to the manager's ClusterRole", onChart: true,
		kind: "ClusterRole", objName: prefix + "manager-role",
		edit: func(t *testing.T, o *unstructured.Unstructured) {
			editFirst(t, o, func(r map[string]any) { r["verbs"] = append(r["verbs"].([]any), "deletecollection") }, "rules")
		},
		want: "rules[0].verbs",
	}, {
		name: "a binding's subject in another namespace", onChart: false,
		kind: "ClusterRoleBinding", objName: prefix + "manager-rolebinding",
		edit: func(t *testing.T, o *unstructured.Unstructured) {
			editFirst(t, o, func(s map[string]any) { s["namespace"] = "kube-system" }, "subjects")
		},
		want: "subjects[0].namespace",
	}, {
		name: "the webhook fails open", onChart: true,
		kind: "MutatingWebhookConfiguration", objName: prefix + "mutating-webhook-configuration",
		edit: func(t *testing.T, o *unstructured.Unstructured) {
			editFirst(t, o, func(w map[string]any) { w["failurePolicy"] = "Ignore" }, "webhooks")
		},
		want: "webhooks[0].failurePolicy",
	}, {
		name: "a manager flag added", onChart: false,
		kind: "Deployment", objName: prefix + "controller-manager",
		edit: func(t *testing.T, o *unstructured.Unstructured) {
			editContainer(t, o, func(c map[string]any) { c["args"] = append(c["args"].([]any), "--enable-http2") })
		},
		want: "spec.template.spec.containers[0].args[6]",
	}, {
		name: "the manager's NAME_PREFIX", onChart: true,
		kind: "Deployment", objName: prefix + "controller-manager",
		edit: func(t *testing.T, o *unstructured.Unstructured) {
			editContainer(t, o, func(c map[string]any) {
				for _, e := range c["env"].([]any) {
					if e.(map[string]any)["name"] == "NAME_PREFIX" {
						e.(map[string]any)["value"] = "mao-"
					}
				}
			})
		},
		want: "env[1].value",
	}, {
		name: "privilege escalation allowed", onChart: true,
		kind: "Deployment", objName: prefix + "controller-manager",
		edit: func(t *testing.T, o *unstructured.Unstructured) {
			editContainer(t, o, func(c map[string]any) {
				c["securityContext"].(map[string]any)["allowPrivilegeEscalation"] = true
			})
		},
		want: "securityContext.allowPrivilegeEscalation",
	}, {
		name: "a Helm label in the pod template (normalized only on an object's own metadata)", onChart: true,
		kind: "Deployment", objName: prefix + "controller-manager",
		edit: func(t *testing.T, o *unstructured.Unstructured) {
			must(t, unstructured.SetNestedField(o.Object, "x", "spec", "template", "metadata", "labels", "app.kubernetes.io/instance"))
		},
		want: "spec.template.metadata.labels.app.kubernetes.io/instance",
	}, {
		name: "a label other than Helm's on an object", onChart: true,
		kind: "Service", objName: prefix + "controller-manager-metrics-service",
		edit: func(t *testing.T, o *unstructured.Unstructured) {
			labels := o.GetLabels()
			delete(labels, "control-plane")
			o.SetLabels(labels)
		},
		want: "metadata.labels.control-plane",
	}, {
		name: "the allowed image list", onChart: false,
		kind: "ConfigMap", objName: prefix + "images",
		edit: func(t *testing.T, o *unstructured.Unstructured) {
			must(t, unstructured.SetNestedField(o.Object, "ghcr.io/*\n", "data", "allowedImages"))
		},
		want: "data.allowedImages",
	}, {
		name: "one character of the CRD's schema", onChart: true,
		kind: "CustomResourceDefinition", objName: "memoryadapters.memory.agentmem.io",
		edit: func(t *testing.T, o *unstructured.Unstructured) {
			must(t, unstructured.SetNestedField(o.Object, "memoryadapterz", "spec", "names", "plural"))
		},
		want: "spec.names.plural",
	}, {
		name: "a namespace on a namespaced object (the cluster-scoped allowance is per kind)", onChart: true,
		kind: "Role", objName: prefix + "manager-role",
		edit: func(t *testing.T, o *unstructured.Unstructured) { o.SetNamespace("default") },
		want: "rendered by",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := renderKustomize(t, renderKustomizeArgs{base: "config/default"})
			c := renderChart(t, renderChartArgs{namespace: defaultNamespace})
			side := k
			if tc.onChart {
				side = c
			}
			found := false
			for _, o := range side {
				if o.GetKind() == tc.kind && o.GetName() == tc.objName {
					tc.edit(t, o)
					found = true
				}
			}
			if !found {
				t.Fatalf("no %s %s in the rendering to change", tc.kind, tc.objName)
			}
			diffs := compareInstalls(k, c, cmp)
			joined := strings.Join(diffs, "\n")
			if !strings.Contains(joined, tc.objName) || !strings.Contains(joined, tc.want) {
				t.Errorf("changing %s on one side alone: want a difference naming %s and %q, got:\n  %s",
					tc.kind, tc.objName, tc.want, strings.Join(diffs, "\n  "))
			}
		})
	}
}

// TestComparisonCatchesMissingAndExtraObjects: an object only one side renders is a
// difference unless its kind is listed with a reason.
func TestComparisonCatchesMissingAndExtraObjects(t *testing.T) {
	t.Parallel()
	k := renderKustomize(t, renderKustomizeArgs{base: "config/default"})
	c := renderChart(t, renderChartArgs{namespace: defaultNamespace})
	cmp := comparison{onlyInChart: pdbOnlyInChart, onlyInKustomize: namespaceOnlyInKustomize}
	var dropped []*unstructured.Unstructured
	for _, o := range c {
		if o.GetKind() != "ValidatingAdmissionPolicyBinding" || o.GetName() != "memory-adapter-operator-manager-secrets" {
			dropped = append(dropped, o)
		}
	}
	if diffs := compareInstalls(k, dropped, cmp); len(diffs) != 1 || !strings.Contains(diffs[0], "not by the chart") {
		t.Errorf("a policy binding missing from the chart: want one difference, got %q", diffs)
	}
	extra := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": "memory-adapter-operator-cluster-admin"},
	}}
	if diffs := compareInstalls(k, append(c, extra), cmp); len(diffs) != 1 || !strings.Contains(diffs[0], "not by hack/render-install.sh") {
		t.Errorf("an extra ClusterRoleBinding in the chart: want one difference, got %q", diffs)
	}
	if diffs := compareInstalls(k, c, comparison{}); len(diffs) != 2 {
		t.Errorf("without the listed allowances the PodDisruptionBudget and the Namespace must differ, got %q", diffs)
	}
}

// replaceInExpression returns an edit that replaces old with replacement, once, in the
// expression of the named item of the list at path.
func replaceInExpression(item, old, replacement string, path ...string) func(*testing.T, *unstructured.Unstructured) {
	return func(t *testing.T, o *unstructured.Unstructured) {
		t.Helper()
		editListItem(t, o, item, func(m map[string]any) {
			e := m["expression"].(string)
			if !strings.Contains(e, old) {
				t.Fatalf("%s's expression has no %q to change", item, old)
			}
			m["expression"] = strings.Replace(e, old, replacement, 1)
		}, path...)
	}
}

func editContainer(t *testing.T, o *unstructured.Unstructured, f func(map[string]any)) {
	t.Helper()
	editFirst(t, o, f, "spec", "template", "spec", "containers")
}

// editFirst changes the first item of the list at path.
func editFirst(t *testing.T, o *unstructured.Unstructured, f func(map[string]any), path ...string) {
	t.Helper()
	editItem(t, o, func(map[string]any) bool { return true }, f, path...)
}

// editListItem changes the item of the list at path whose name is name.
func editListItem(t *testing.T, o *unstructured.Unstructured, name string, f func(map[string]any), path ...string) {
	t.Helper()
	editItem(t, o, func(m map[string]any) bool { return m["name"] == name }, f, path...)
}

// editItem changes, with f, the first item of the list at path that pick picks.
func editItem(t *testing.T, o *unstructured.Unstructured, pick func(map[string]any) bool, f func(map[string]any), path ...string) {
	t.Helper()
	items, _, _ := unstructured.NestedSlice(o.Object, path...)
	for _, it := range items {
		if m := it.(map[string]any); pick(m) {
			f(m)
			must(t, unstructured.SetNestedSlice(o.Object, items, path...))
			return
		}
	}
	t.Fatalf("no item to change under %v", path)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
