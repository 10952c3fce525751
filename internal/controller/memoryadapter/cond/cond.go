package cond

import (
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MessageLimit is the longest condition message New writes, in bytes: metav1.Condition takes
// 32768, and the messages quote evidence that an adapter wrote, so it keeps a wide margin.
const MessageLimit = 2048

// New is the condition value every decision returns, its message bounded to MessageLimit.
func New(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: Bound(msg)}
}

// Bound keeps a message within MessageLimit, marking a cut with an ellipsis.
func Bound(s string) string {
	if len(s) <= MessageLimit {
		return s
	}
	return Truncate(s, MessageLimit) + "…"
}

// Truncate cuts s to at most n bytes on a rune boundary.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
