package main

import "testing"

func TestOwnSecretRef(t *testing.T) {
	for name, tc := range map[string]struct {
		flag, podNS, want string
		wantErr           bool
	}{
		"default in the pod's namespace": {"", "ops", "ops/" + defaultNamePrefix + tokenKeySuffix, false},
		"explicit":                       {"a/b", "ops", "a/b", false},
		"no namespace anywhere":          {"", "", "", true},
		"no slash":                       {"b", "ops", "", true},
		"empty name":                     {"a/", "ops", "", true},
		"empty namespace":                {"/b", "ops", "", true},
		"two slashes":                    {"a/b/c", "ops", "", true},
	} {
		got, err := ownSecretRef(tc.flag, tc.podNS, defaultNamePrefix+tokenKeySuffix)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: error %v, want error %v", name, err, tc.wantErr)
			continue
		}
		if err == nil && got.String() != tc.want {
			t.Errorf("%s: got %s, want %s", name, got, tc.want)
		}
	}
}

func TestDefaultNames(t *testing.T) {
	f := managerFlags{namePrefix: "mao-"}
	f.certRotation.ServiceName = "explicit"
	f.defaultNames()
	if got := f.certRotation.SecretName; got != "mao-webhook-server-cert" {
		t.Errorf("webhook Secret: got %q", got)
	}
	if got := f.certRotation.ServiceName; got != "explicit" {
		t.Errorf("an explicit flag was overwritten: %q", got)
	}
	if got := f.certRotation.WebhookConfigurationName; got != "mao-mutating-webhook-configuration" {
		t.Errorf("webhook configuration: got %q", got)
	}
}

func TestDoorbellAddress(t *testing.T) {
	for _, tc := range []struct {
		bind, explicit, namespace, want string
		fails                           bool
	}{
		{bind: "", want: ""},
		{bind: ":8082", namespace: "agent-memory", want: "http://pam-evidence-doorbell.agent-memory.svc:8082/v1/doorbell"},
		{bind: "127.0.0.1:9999", explicit: "http://127.0.0.1:9999/v1/doorbell", want: "http://127.0.0.1:9999/v1/doorbell"},
		{bind: ":8082", fails: true},                                                                   // no namespace to name the Service in
		{bind: "", explicit: "http://x/v1/doorbell", fails: true},                                      // rings nobody would answer
		{bind: "8082", namespace: "ns", fails: true},                                                   // not host:port
		{bind: ":0", namespace: "ns", fails: true},                                                     // no port adapters could ring
		{bind: ":http", namespace: "ns", fails: true},                                                  // a named port
		{bind: ":70000", namespace: "ns", fails: true},                                                 // out of range
		{bind: ":8082", namespace: "ns", want: "http://pam-evidence-doorbell.ns.svc:8082/v1/doorbell"}, // the Service's own port
	} {
		got, err := doorbellAddress(tc.bind, tc.explicit, "pam-", tc.namespace)
		if (err != nil) != tc.fails || got != tc.want {
			t.Errorf("doorbellAddress(%q, %q, %q) = %q, %v; want %q (fails %t)", tc.bind, tc.explicit, tc.namespace, got, err, tc.want, tc.fails)
		}
	}
}
