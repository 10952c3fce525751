package v1alpha1

// AccessRights is what a ServiceAccount's token may do.
// +kubebuilder:validation:Enum=ReadWrite;ReadOnly
type AccessRights string

const (
	// AccessReadWrite stores, retrieves and searches.
	AccessReadWrite AccessRights = "ReadWrite"
	// AccessReadOnly retrieves and searches; its stores are refused with 403 forbidden.
	AccessReadOnly AccessRights = "ReadOnly"
)

// AccessSpec gives each ServiceAccount of the bound workloads a token of its own, with the
// rights and the items the platform engineer grants it here; a workload never chooses them.
// With access set, only pods running as a listed ServiceAccount are released by the gate.
type AccessSpec struct {
	// serviceAccounts lists the ServiceAccounts of the adapter's namespace whose pods may
	// bind to the adapter, each with its rights and, optionally, the sub-scope it works in.
	// A bound pod of another ServiceAccount stays gated.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	ServiceAccounts []ServiceAccountAccess `json:"serviceAccounts"`
}

// ServiceAccountAccess is one ServiceAccount's grant.
type ServiceAccountAccess struct {
	// name is the ServiceAccount's name, in the adapter's namespace. Its binding Secret is
	// NAME-binding.<name>.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// rights is ReadWrite (store, retrieve, search) or ReadOnly (retrieve and search; a
	// store is refused with 403 forbidden).
	// +required
	Rights AccessRights `json:"rights"`

	// subScope isolates the ServiceAccount's items: its calls work in this sub-scope of the
	// adapter's scope, which neither the scope nor any other sub-scope sees, and which sees
	// neither. ServiceAccounts that name the same sub-scope share it (a writer and its
	// read-only readers). Omitted, the ServiceAccount works in the adapter's scope itself.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SubScope string `json:"subScope,omitempty"`
}

// AccessStatus is where spec.access stands on the adapter's pods.
type AccessStatus struct {
	// serviceAccounts are the ServiceAccounts whose grants every serving adapter pod
	// enforces: the operator read each pod's evidence with a token that only the current
	// grants' token file accepts. The gate releases a pod only once its ServiceAccount is
	// here, so an agent never starts with a token the adapter does not know yet.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	ServiceAccounts []string `json:"serviceAccounts,omitempty"`
}
