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
