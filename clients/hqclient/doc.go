// Package hqclient is the Go client of posedge-hq's admin API, generated
// from docs/openapi-hq.yaml by oapi-codegen (the version pinned below) for
// HQ engineers' tools. Committed like tillclient, and held to a fresh
// generation the same way. Regenerate with `go generate ./clients/...`.
package hqclient

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config oapi-codegen.yaml ../../docs/openapi-hq.yaml
