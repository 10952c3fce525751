package main

import (
	"slices"
	"testing"
)

func TestSplitRule(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    []string
		wantErr bool
	}{
		"plain": {in: "INPUT -j KUBE-FIREWALL", want: []string{"INPUT", "-j", "KUBE-FIREWALL"}},
		"quoted comment": {
			in:   `OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`,
			want: []string{"OUTPUT", "-m", "comment", "--comment", "kubernetes service portals", "-j", "KUBE-SERVICES"},
		},
		"escaped quote inside comment": {
			in:   `X --comment "a \"b\" c" -j ACCEPT`,
			want: []string{"X", "--comment", `a "b" c`, "-j", "ACCEPT"},
		},
		"empty quoted argument": {in: `X --comment "" -j ACCEPT`, want: []string{"X", "--comment", "", "-j", "ACCEPT"}},
		"repeated spaces":       {in: "A  -j   B", want: []string{"A", "-j", "B"}},
		"unbalanced quote":      {in: `X --comment "open`, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := splitRule(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRuleIsOurs(t *testing.T) {
	tests := map[string]struct {
		args []string
		want bool
	}{
		"jump to kube chain":    {args: []string{"-m", "comment", "--comment", "x", "-j", "KUBE-SERVICES"}, want: true},
		"jump to the agent's":   {args: []string{"-m", "comment", "--comment", netpolComment, "-j", netpolChain}, want: true},
		"goto cni chain":        {args: []string{"-g", "CNI-abc"}, want: true},
		"names our bridge":      {args: []string{"-i", bridgeName, "-j", "ACCEPT"}, want: true},
		"names pod cidr":        {args: []string{"-s", podCIDR, "-j", "MASQUERADE"}, want: true},
		"someone else's jump":   {args: []string{"-j", "DOCKER"}, want: false},
		"comment mentions KUBE": {args: []string{"--comment", "KUBE-SERVICES", "-j", "ACCEPT"}, want: false},
		"trailing -j":           {args: []string{"-j"}, want: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ruleIsOurs(tc.args); got != tc.want {
				t.Fatalf("ruleIsOurs(%q) = %v, want %v", tc.args, got, tc.want)
			}
		})
	}
}

func TestUnescapeMount(t *testing.T) {
	tests := map[string]string{
		`/var/tmp/mao-cluster/kubelet`: "/var/tmp/mao-cluster/kubelet",
		`/var/tmp/with\040space`:       "/var/tmp/with space",
		`/a\011tab\134back`:            "/a\ttab\\back",
		`/trailing\04`:                 `/trailing\04`,
		`/not\xyzoctal`:                `/not\xyzoctal`,
	}
	for in, want := range tests {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOurChain(t *testing.T) {
	for name, want := range map[string]bool{
		"KUBE-SERVICES": true, "KUBE-KUBELET-CANARY": true, "CNI-HOSTPORT-DNAT": true, netpolChain: true,
		"INPUT": false, "DOCKER": false, "kube-services": false, "MY-KUBE-X": false,
	} {
		if got := ourChain(name); got != want {
			t.Errorf("ourChain(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestNetpolRulesQueueEveryPodConnection keeps the exemptions before the queue (a rule after
// them would never see established flows) and the queue without --queue-bypass (fail closed).
func TestNetpolRulesQueueEveryPodConnection(t *testing.T) {
	rules := netpolRules(podCIDR, "")
	if len(rules) != 4 || !slices.Contains(rules[0], "ESTABLISHED,RELATED") || !slices.Contains(rules[1], "--uid-owner") {
		t.Fatalf("exemptions must come first: %q", rules)
	}
	for _, r := range rules[2:] {
		if !slices.Contains(r, podCIDR) || !slices.Contains(r, "NFQUEUE") || slices.Contains(r, "--queue-bypass") {
			t.Errorf("rule %q: want pod traffic queued, fail closed", r)
		}
		if !ruleIsOurs(r) {
			t.Errorf("rule %q: the sweep would not recognise it", r)
		}
	}
}
