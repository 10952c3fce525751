package v1alpha1

import "github.com/agentmem/memory-adapter-operator/api/memory"

// MemoryAdapter's ManifestValid condition and its reasons.
const (
	// ConditionManifestValid is True when spec.manifest passes api/memory's Manifest.Validate.
	// The CRD's CEL rules already reject incoherent manifests; this condition still reports
	// the Go verdict, so a manifest admitted under an older CRD cannot go unnoticed.
	ConditionManifestValid = "ManifestValid"
	// ReasonManifestCoherent surfaces when the manifest is well formed and coherent.
	ReasonManifestCoherent = "ManifestCoherent"
	// ReasonManifestIncoherent surfaces when Manifest.Validate rejects the manifest; the
	// message is the seed's message for the first failing rule.
	ReasonManifestIncoherent = "ManifestIncoherent"
)

// MemoryAdapter's Deployed condition and its reasons.
const (
	// ConditionDeployed is True when the adapter's Deployment has its desired replicas ready
	// with the current spec.
	ConditionDeployed = "Deployed"
	// ReasonDeploymentReady surfaces when every desired replica is updated and ready.
	ReasonDeploymentReady = "DeploymentReady"
	// ReasonDeploymentProgressing surfaces while a rollout is under way.
	ReasonDeploymentProgressing = "DeploymentProgressing"
	// ReasonDeploymentFailed surfaces when the rollout exceeded its progress deadline.
	ReasonDeploymentFailed = "DeploymentFailed"
	// ReasonBackendSecretMissing surfaces when spec.backend.connectionSecretRef names a Secret
	// or key that does not exist.
	ReasonBackendSecretMissing = "BackendSecretMissing"
	// ReasonInvalidSpec surfaces when the spec cannot be turned into a Deployment, for example
	// an unparsable storage size; the message names the field.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonScaledToZero surfaces when spec.replicas is 0: nothing serves the manifest.
	ReasonScaledToZero = "ScaledToZero"
	// ReasonNodeUnavailable surfaces when replicas are missing because the node an adapter
	// pod runs on, or the node holding its data claim, is not ready or gone; the message names
	// the node, the pod and the claim.
	ReasonNodeUnavailable = "NodeUnavailable"
	// ReasonAdapterCrashLooping surfaces when an adapter container keeps exiting and is not
	// ready (the kubelet restarts it, backing off): the message quotes its last exit code and
	// the end of its termination message, where the server says why it stopped (a refused
	// password, an unreachable backend). The message holds no restart count or time, so it
	// stays the same, and is announced once, while the cause does.
	ReasonAdapterCrashLooping = "AdapterCrashLooping"
)

// MemoryAdapter's Conformant condition and its reasons.
const (
	// ConditionConformant is True when the latest conformance run for the current manifest
	// hash, service version and adapter version passed every applicable case.
	ConditionConformant = "Conformant"
	// ReasonConformancePassed surfaces when that run passed.
	ReasonConformancePassed = "ConformancePassed"
	// ReasonConformanceFailed surfaces when that run failed a case; the message names the cases.
	ReasonConformanceFailed = "ConformanceFailed"
	// ReasonConformanceRunning surfaces while the run's Job is active.
	ReasonConformanceRunning = "ConformanceRunning"
	// ReasonConformancePending surfaces while no run can start yet, for example before the
	// adapter is deployed.
	ReasonConformancePending = "ConformancePending"
	// ReasonConformanceJobFailed surfaces when the Job ended without a readable report, or
	// exceeded spec.conformance.timeout.
	ReasonConformanceJobFailed = "ConformanceJobFailed"
	// ReasonConformanceJobBlocked surfaces, with status Unknown, when the run's pod cannot
	// start (an image that cannot be pulled, no node to schedule on, a missing Secret); the
	// message carries the kubelet's or scheduler's words.
	ReasonConformanceJobBlocked = "ConformanceJobBlocked"
	// ReasonConformanceOutdated surfaces when the service or adapter version changed since the
	// passing run, until a new run finishes.
	ReasonConformanceOutdated = "ConformanceOutdated"
)

// MemoryAdapter's Healthy condition and its reasons. The evidence reasons are api/memory's
// (memory.JudgeEvidence), so a reason read off an adapter's /v1/evidence is the one shown here.
const (
	// ConditionHealthy is True when the adapter's latest evidence upholds the verified manifest.
	ConditionHealthy = "Healthy"
	// ReasonEvidenceValid surfaces when the latest evidence upholds the manifest.
	ReasonEvidenceValid = "EvidenceValid"
	// ReasonEvidenceInvalidatesManifest surfaces when the adapter reports its own manifest
	// unavailable; the message carries the adapter's explanation.
	ReasonEvidenceInvalidatesManifest = "EvidenceInvalidatesManifest"
	// ReasonServiceVersionChanged surfaces when the reported service version differs from the
	// one the passing conformance run tested.
	ReasonServiceVersionChanged = string(memory.ReasonServiceVersionChanged)
	// ReasonAdapterVersionChanged surfaces when the reported adapter version differs from the
	// one the passing conformance run tested.
	ReasonAdapterVersionChanged = "AdapterVersionChanged"
	// ReasonManifestMismatch surfaces when the adapter serves a manifest other than
	// spec.manifest.
	ReasonManifestMismatch = "ManifestMismatch"
	// ReasonEvidencePending surfaces, with status Unknown, until the first evidence is read
	// from a deployed adapter.
	ReasonEvidencePending = "EvidencePending"
	// ReasonCapabilityProbeFailed surfaces when a capability probe failed; the message names it.
	ReasonCapabilityProbeFailed = string(memory.ReasonCapabilityProbeFailed)
	// ReasonIndexLagging surfaces when an adapter that claims immediate search reports index lag.
	ReasonIndexLagging = string(memory.ReasonIndexLagging)
	// ReasonEvidenceUnreachable surfaces when failureThreshold consecutive reads failed.
	ReasonEvidenceUnreachable = "EvidenceUnreachable"
	// ReasonEvidenceStale surfaces, with status Unknown, when no evidence arrived within
	// spec.health.stalenessGrace.
	ReasonEvidenceStale = "EvidenceStale"
	// ReasonVersionsMixed surfaces, with status Unknown, while the adapter's pods report
	// different service or adapter versions (a rollout or a backend upgrade in progress); the
	// message names each pod's versions.
	ReasonVersionsMixed = "VersionsMixed"
)

// MemoryAdapter's Available condition (the summary) and its reasons.
const (
	// ConditionAvailable is True only when ManifestValid, Deployed, Conformant and Healthy are
	// all True; otherwise it carries the reason and message of the first condition, in that
	// order, that is not True. Workload gating and `kubectl wait` use this condition.
	ConditionAvailable = "Available"
	// ReasonAdapterAvailable surfaces when every other condition is True.
	ReasonAdapterAvailable = "AdapterAvailable"
)

// The conditions GitOps tools and kstatus read (sigs.k8s.io/cli-utils/pkg/kstatus: Flux,
// kpt, `kubectl wait`, Argo CD's health checks). They restate Available in the words those
// tools know and decide nothing of their own.
const (
	// ConditionReady is Available's twin: the same status, reason and message, always.
	ConditionReady = "Ready"
	// ConditionReconciling is present, True, while the adapter is not Available and the
	// controller is still making progress towards it (a rollout, a conformance run, evidence
	// awaited); absent otherwise. kstatus reads it as InProgress.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is present, True, while the adapter is not Available for a reason that
	// does not resolve without a person (StalledReasons); absent otherwise. kstatus reads it as
	// Failed.
	ConditionStalled = "Stalled"
)

// StalledReasons are Available's reasons that need someone to act: a spec to fix, a Secret to
// create, a crash to read, a failed conformance case to answer. Every other reason that is not
// AdapterAvailable is progress the controller makes on its own, or the user's own choice
// (ScaledToZero, which is neither).
var StalledReasons = []string{
	ReasonManifestIncoherent, ReasonInvalidSpec, ReasonBackendSecretMissing, ReasonDeploymentFailed,
	ReasonAdapterCrashLooping, ReasonConformanceFailed, ReasonConformanceJobFailed, ReasonManifestMismatch,
}

// MemoryAdapter's ScopePurged condition and its reasons. The condition appears only while a
// MemoryAdapter with deletionPolicy Delete on Postgres or Redis is being deleted: the
// memory.agentmem.io/purge-scope finalizer holds it until a purge Job deleted every item of
// backend.scope.
const (
	// ConditionScopePurged is True when the purge Job deleted the scope's items.
	ConditionScopePurged = "ScopePurged"
	// ReasonPurgeWaitingForAdapter surfaces, with status Unknown, while the adapter's pods
	// stop: an instance still serving could store an item after the purge.
	ReasonPurgeWaitingForAdapter = "PurgeWaitingForAdapter"
	// ReasonPurgeRunning surfaces, with status Unknown, while the purge Job runs.
	ReasonPurgeRunning = "PurgeRunning"
	// ReasonPurgeBlocked surfaces, with status Unknown, when the purge pod cannot start (an
	// image that cannot be pulled, a missing connection Secret); the kubelet's words are
	// quoted.
	ReasonPurgeBlocked = "PurgeBlocked"
	// ReasonPurgeFailed surfaces when the purge Job failed; the message quotes the pod's
	// termination message and says how to retry or give up.
	ReasonPurgeFailed = "PurgeFailed"
	// ReasonPurgeSucceeded surfaces when the purge Job deleted the scope's items.
	ReasonPurgeSucceeded = "PurgeSucceeded"
	// ReasonNamespaceTerminating surfaces, with status False, when the MemoryAdapter's
	// namespace is being deleted: the API server refuses to create the purge Job there, so the
	// finalizer is released without a purge and the scope's items stay on the server. Without
	// the release the namespace would never finish terminating.
	ReasonNamespaceTerminating = "NamespaceTerminating"
	// ReasonAdapterDeleting surfaces on Available while the MemoryAdapter waits for its
	// scope's purge.
	ReasonAdapterDeleting = "AdapterDeleting"
)
