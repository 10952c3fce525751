package memoryadapter

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

func TestReadOnlyWrite(t *testing.T) {
	probe := func(name string, ok bool, detail string) *memory.EvidenceReport {
		return &memory.EvidenceReport{Probes: []memory.ProbeResult{{Name: "reachable", OK: true}, {Name: name, OK: ok, Detail: detail}}}
	}
	tests := []struct {
		name string
		ev   *memory.EvidenceReport
		want bool
	}{
		{"no evidence", nil, false},
		{"write passes", probe("write", true, ""), false},
		{"SQLite opened read-only", probe("write", false, "store a probe row: attempt to write a readonly database (8)"), true},
		{"EROFS", probe("write", false, "store a probe row: open /var/lib/memory-adapter/x: read-only file system"), true},
		{"a full disk: a new pod would not help", probe("write", false, "store a probe row: database or disk is full (13)"), false},
		{"an I/O error: nor here", probe("write", false, "store a probe row: disk I/O error (10)"), false},
		{"another probe says read-only", probe("schema", false, "attempt to write a readonly database"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := readOnlyWrite(tt.ev) != ""; got != tt.want {
				t.Fatalf("readOnlyWrite = %t, want %t", got, tt.want)
			}
		})
	}
}

// TestReadOnlyRestart: no replacement before the verdict and the pod are a minute old; then
// each pod lives half as long as the verdict has, so replacements double apart, up to the cap.
func TestReadOnlyRestart(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	tests := []struct {
		name        string
		since, pod  time.Time
		want        bool
		wantWaitMin time.Duration
	}{
		{"verdict 10 s old, pod older", ago(10 * time.Second), ago(time.Hour), false, 50 * time.Second},
		{"verdict a minute old, pod older", ago(time.Minute), ago(time.Hour), true, 0},
		{"verdict a minute old, pod 30 s", ago(time.Minute), ago(30 * time.Second), false, 30 * time.Second},
		{"verdict 2 min, pod 1 min", ago(2 * time.Minute), ago(time.Minute), true, 0},
		{"verdict 4 min, pod 1 min: the next waits 2 min", ago(4 * time.Minute), ago(time.Minute), false, 2 * time.Minute},
		{"verdict 4 min, pod 2 min", ago(4 * time.Minute), ago(2 * time.Minute), true, 0},
		{"verdict 10 h, pod 29 min: the cap", ago(10 * time.Hour), ago(29 * time.Minute), false, time.Minute},
		{"verdict 10 h, pod 30 min: the cap", ago(10 * time.Hour), ago(30 * time.Minute), true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, wait := readOnlyRestart(tt.since, tt.pod, now)
			if got != tt.want {
				t.Fatalf("restart = %t, want %t", got, tt.want)
			}
			if !got && wait < tt.wantWaitMin {
				t.Fatalf("wait %v, want at least %v", wait, tt.wantWaitMin)
			}
			if !got {
				if again, _ := readOnlyRestart(tt.since, tt.pod, now.Add(wait)); !again {
					t.Fatalf("after waiting %v the answer is still no: the wait is too short to ever decide", wait)
				}
			}
		})
	}
}

func TestNewestPod(t *testing.T) {
	at := func(m int, deleting bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(time.Date(2026, 12, 6, 12, m, 0, 0, time.UTC))}}
		if deleting {
			p.DeletionTimestamp = &p.CreationTimestamp
		}
		return p
	}
	if got := newestPod([]corev1.Pod{at(1, false), at(5, true), at(3, false)}); got.Minute() != 3 {
		t.Fatalf("newest = %v, want the pod of minute 3 (the one of minute 5 is being deleted)", got)
	}
	if got := newestPod(nil); !got.IsZero() {
		t.Fatalf("newest of none = %v", got)
	}
}
