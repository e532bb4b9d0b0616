// Package secret reads, makes and hides posedge's secrets: admin tokens of
// at least 32 characters, URLs with credentials, config keys marked secret.
package secret
