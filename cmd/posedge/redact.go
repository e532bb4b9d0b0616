package main

import (
	"github.com/posedge/posedge/edge/config"
	"github.com/posedge/posedge/internal/secret"
)

// redactionNote is what MANIFEST.txt says about secrets.
const redactionNote = `Secrets are left out: every config field marked secret in posedge's config
struct (redis.password, redis.sentinel_password, terminals[].key_sha256) is
redacted, hq.nats_url keeps all but its user and password, and the value of
any key posedge does not know is redacted too. Files named by *_file keys
(admin token, NATS credentials, TLS keys) are never read.
`

// redactConfig returns the config without secrets (secret.RedactConfig
// against posedge's config struct) and says how.
func redactConfig(raw []byte) ([]byte, string) {
	return secret.RedactConfig(raw, config.Config{})
}
