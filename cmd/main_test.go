package main

import "testing"

func TestOwnSecretRef(t *testing.T) {
	for name, tc := range map[string]struct {
		flag, podNS, want string
		wantErr           bool
	}{
		"default in the pod's namespace": {"", "ops", "ops/" + defaultTokenKeySecret, false},
		"explicit":                       {"a/b", "ops", "a/b", false},
		"no namespace anywhere":          {"", "", "", true},
		"no slash":                       {"b", "ops", "", true},
		"empty name":                     {"a/", "ops", "", true},
		"empty namespace":                {"/b", "ops", "", true},
		"two slashes":                    {"a/b/c", "ops", "", true},
	} {
		got, err := ownSecretRef(tc.flag, tc.podNS, defaultTokenKeySecret)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: error %v, want error %v", name, err, tc.wantErr)
			continue
		}
		if err == nil && got.String() != tc.want {
			t.Errorf("%s: got %s, want %s", name, got, tc.want)
		}
	}
}
