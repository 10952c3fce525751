package backend

import (
	"time"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// external is a server the user brings (spec.backend.external). It has no package: the
// operator runs the user's image and judges it over the wire, so the binary never opens it
// and the user describes its lifecycle.
func init() {
	Register(Backend{
		Name: "external",
		Type: memoryv1alpha1.BackendExternal,
		// The operator cannot know a foreign server's lifecycle: SQLite's conservative values
		// stand until spec.lifecycle states them (docs/operator.md).
		Lifecycle:     Lifecycle(5*time.Second, 30*time.Second, NoRetries()),
		UserDescribed: true,
		ImageRequired: "name the image of the server you bring",
	})
}
