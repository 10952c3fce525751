package memoryadapter

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/intern"
)

// slimAdapter is the cache transform of MemoryAdapters. It keeps every field (the controller
// reads the whole spec and status, and computes its status merge patch from the cached copy,
// so a field left out of the cache would be left out of that patch's base and written again
// every reconcile or, worse, lost), but holds them in less memory: a deep copy, whose slices
// are exactly as long as their contents where the decoder's appends may leave room to spare,
// in which the strings adapters repeat are intern.Words' (internStrings), a condition's
// message that restates another's (Ready and Reconciling restate Available) shares its string,
// and the lists and settings most adapters hold alike (conformance results, the manifest's
// field and filter lists, the lifecycle) are one shared copy. Every value stays equal, so
// nothing that reads or patches it can tell the difference.
func slimAdapter(obj any) (any, error) {
	ma, ok := obj.(*memoryv1alpha1.MemoryAdapter)
	if !ok {
		return obj, nil
	}
	ma.ManagedFields = nil
	slim := ma.DeepCopy()
	slim.Namespace = intern.Words.Intern(slim.Namespace)
	internStrings(reflect.ValueOf(&slim.Spec).Elem(), slim.Name)
	internStrings(reflect.ValueOf(&slim.Status).Elem(), slim.Name)
	conds := slim.Status.Conditions
	for i := range conds {
		c := &conds[i]
		for _, p := range conds[:i] {
			if p.Message == c.Message {
				c.Message = p.Message
				break
			}
		}
	}
	if res := slim.Status.Conformance; res != nil {
		res.Cases = caseLists.Share(res.Cases)
		res.Profiles = profileLists.Share(res.Profiles)
	}
	m := &slim.Spec.Manifest
	m.NativeItemFields = itemFieldLists.Share(m.NativeItemFields)
	m.DroppedItemFields = itemFieldLists.Share(m.DroppedItemFields)
	m.SupportedFilters = filterLists.Share(m.SupportedFilters)
	slim.Spec.Lifecycle = lifecycles.Share(slim.Spec.Lifecycle)
	slim.Status.Lifecycle = lifecycles.Share(slim.Status.Lifecycle)
	return slim, nil
}

// internStrings replaces every exported string in v (addressable: a field of the slim copy)
// with intern.Words' equal copy, except those holding the adapter's name (its objects'
// names, its run's Job, messages that name it): they are the adapter's own, and learning
// them would fill the vocabulary with words no other adapter repeats. Map values cannot be
// set in place and are left as they are (the pod template's labels and annotations).
func internStrings(v reflect.Value, name string) {
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); v.CanSet() && s != "" && !strings.Contains(s, name) {
			v.SetString(intern.Words.Intern(s))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			internStrings(v.Elem(), name)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			if t.Field(i).IsExported() {
				internStrings(v.Field(i), name)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			internStrings(v.Index(i), name)
		}
	}
}

// The manager's shared lists and settings (intern.Lists, intern.Values): conformance case
// and profile results, the manifest's item fields and filter keys, the cached pods' slim
// containers (slimPod: a name and ports), and lifecycle settings (spec.lifecycle and
// status.lifecycle).
var (
	caseLists = intern.NewLists(func(c memoryv1alpha1.ConformanceCaseResult) string {
		return listKey(string(c.ID), string(c.Outcome), c.Message)
	})
	profileLists = intern.NewLists(func(p memoryv1alpha1.ConformanceProfileResult) string {
		return listKey(string(p.ID), string(p.Outcome), p.Message)
	})
	itemFieldLists = intern.NewLists(func(f memoryv1alpha1.ItemField) string { return string(f) + "\x00" })
	filterLists    = intern.NewLists(func(f memoryv1alpha1.FilterKey) string { return string(f) + "\x00" })
	containerLists = intern.NewLists(containerKey)
	lifecycles     = intern.NewValues[memoryv1alpha1.LifecycleSpec]()
)

// listKey is one result's part of a list's key: its id and outcome (enums, never holding a
// NUL) and its message, length first, so that no two lists share a key.
func listKey(id, outcome, message string) string {
	return id + "\x00" + outcome + "\x00" + strconv.Itoa(len(message)) + "\x00" + message
}

// containerKey is a slim container's part of a list's key: its name and every field of its
// ports, the only fields slimPod keeps. Names are DNS labels and protocols and addresses
// hold no NUL, so fields joined by NUL cannot run into each other.
func containerKey(c corev1.Container) string {
	var b strings.Builder
	b.WriteString(c.Name)
	for _, p := range c.Ports {
		fmt.Fprintf(&b, "\x00%s\x00%d\x00%d\x00%s\x00%s", p.Name, p.ContainerPort, p.HostPort, p.Protocol, p.HostIP)
	}
	b.WriteString("\x01")
	return b.String()
}
