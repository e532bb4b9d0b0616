// Package apispec checks HTTP requests and answers against docs/openapi.yaml,
// the API description the tests hold the daemon to.
package apispec
