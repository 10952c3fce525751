// Package openapitest checks HTTP traffic against the adapter server's OpenAPI document
// (api/memory/openapi.yaml), so that the server and the remote client are tested against
// the published wire format rather than against each other.
package openapitest
