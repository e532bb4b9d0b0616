// Package tillclient is the Go client of posedge's terminal and admin API,
// generated from docs/openapi.yaml by oapi-codegen (the version pinned
// below, the one docs/tills.md names): a till developer's client, built
// the way they would build theirs. posedge-sim speaks through it. It is
// committed so the module builds without the generator; TestGeneratedIsFresh
// fails when it differs from a fresh generation, so a description change
// that breaks the generator, or is not regenerated, fails make test.
// Regenerate with `go generate ./clients/...`.
package tillclient

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config oapi-codegen.yaml ../../docs/openapi.yaml
