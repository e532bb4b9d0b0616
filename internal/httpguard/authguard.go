package httpguard

import (
	"time"

	"github.com/posedge/posedge/internal/authguard"
)

// AuthGuard is authguard.Guard: the counting of failed authentications
// knows no HTTP and lives there, so that the limiter links it without
// linking this package.
type AuthGuard = authguard.Guard

// NewAuthGuard is authguard.New.
func NewAuthGuard(maxFailures int, window time.Duration, now func() time.Time) *AuthGuard {
	return authguard.New(maxFailures, window, now)
}
