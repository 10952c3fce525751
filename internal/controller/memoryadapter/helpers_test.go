package memoryadapter

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentmem/memory-adapter-operator/internal/controller/memoryadapter/cond/condtest"
)

type want condtest.Want

func check(t *testing.T, got metav1.Condition, w want) { t.Helper(); condtest.Want(w).Check(t, got) }

const hashA = condtest.HashA

var run = condtest.Run
var waitingPod = condtest.WaitingPod
