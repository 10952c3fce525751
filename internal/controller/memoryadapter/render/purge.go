package render

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

const (
	// ComponentPurge labels the purge Job and its pods.
	ComponentPurge = "purge"
	// purgeTimeout bounds the purge Job, retries included: one DELETE in PostgreSQL, a SCAN
	// and UNLINK pass in Redis, both far shorter on any real scope.
	purgeTimeout = 10 * time.Minute
	// PurgeBackoffLimit retries a purge pod that failed, for example on a brief outage of the
	// database; the purge is idempotent.
	PurgeBackoffLimit = 2
	// PurgeJobTTL removes a finished purge Job the controller did not delete itself: one left
	// behind when the finalizer was removed by hand. Its removal also retries a failed purge.
	PurgeJobTTL = 24 * time.Hour
)

// PurgeJobName is the name of the adapter's purge Job.
func PurgeJobName(ma *memoryv1alpha1.MemoryAdapter) string { return ma.Name + "-purge" }

// WantsPurge reports whether deleting ma must first delete its scope's items: deletionPolicy
// Delete on a backend with a purge (a shared server). A data volume's items go with the
// volume, which the adapter owns then.
func WantsPurge(ma *memoryv1alpha1.MemoryAdapter) bool {
	return ma.Spec.DeletionPolicy == memoryv1alpha1.DeletionDelete && entry(ma.Spec.Backend.Type).Purges
}

// PurgeJob runs `memory-adapter purge` on the adapter's scope with the connection
// Secret by reference. It has no owner reference: a deletion with foreground propagation
// makes the garbage collector delete every dependent of the adapter, a purge Job created
// after the deletion began included. The controller deletes it after the purge succeeded;
// its TTL removes one left behind otherwise.
func PurgeJob(ma *memoryv1alpha1.MemoryAdapter, image string) *batchv1.Job {
	args := []string{
		"purge",
		"--backend", BackendFlag(ma.Spec.Backend.Type),
		"--scope", ma.Spec.Backend.Scope,
		// Each attempt ends, and writes its result, well before the Job's deadline.
		"--timeout", (purgeTimeout / (PurgeBackoffLimit + 2)).String(),
		"--termination-log", corev1.TerminationMessagePathDefault,
	}
	job := AdapterJob(ma, image, PurgeJobName(ma), ComponentPurge, args,
		[]corev1.Volume{EmptyDir("tmp")}, []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}})
	// The namespace's default ServiceAccount: the adapter's own one is a dependent the
	// garbage collector may already have removed, and the purge needs no API token either.
	job.Spec.Template.Spec.ServiceAccountName = ""
	job.Spec.BackoffLimit = ptr.To[int32](PurgeBackoffLimit)
	job.Spec.ActiveDeadlineSeconds = ptr.To(int64(purgeTimeout.Seconds()))
	job.Spec.TTLSecondsAfterFinished = ptr.To(int32(PurgeJobTTL.Seconds()))
	return job
}
