package ratelimit

import (
	"time"

	"github.com/posedge/posedge/internal/authguard"
)

// AuthGuard limits failed authentications per source address; it lives
// in internal/authguard so that posedge-hq's admin API uses the same one.
type AuthGuard = authguard.Guard

// NewAuthGuard returns a guard blocking an address after maxFailures
// failures within window (the contract: 10 in 60 s); now nil means
// time.Now.
func NewAuthGuard(maxFailures int, window time.Duration, now func() time.Time) *AuthGuard {
	return authguard.New(maxFailures, window, now)
}
