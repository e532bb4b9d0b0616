package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrInvalidPromo is wrapped by SetPromo's errors for a promotion it
// refuses; the message says what is wrong (the admin API answers 400).
var ErrInvalidPromo = errors.New("invalid promotion")

// Bounds of a promotion.
const (
	MaxPromoCoefficient = 10
	DefaultPromoTTL     = 7200 * time.Second
	MaxPromoTTL         = 366 * 24 * time.Hour
)

// Promo is a promotion: from StartsAt until ExpiresAt (StartsAt + TTL)
// every limit — or, with Actions, only those actions' limits — is
// max(1, floor(limit × Coefficient)). The coefficient is applied to six
// decimal places. It lives in Redis (pe:{S}:promo), read by the decision
// script itself, and Redis removes it at ExpiresAt.
type Promo struct {
	Coefficient float64   `json:"coefficient"`
	TTLSeconds  int       `json:"ttl_seconds"`
	StartsAt    time.Time `json:"starts_at"`
	Actions     []string  `json:"actions,omitempty"`
	SetBy       string    `json:"set_by"`
	SetAt       time.Time `json:"set_at"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// SetPromo validates p (coefficient in (0, 10], ttl_seconds default 7200
// and positive, actions known, ending in the future), replaces the current
// promotion with it and logs who set it and when. StartsAt defaults to now
// and SetAt is now, both on Redis time. It returns the stored promotion.
func (l *Limiter) SetPromo(ctx context.Context, p Promo) (Promo, error) {
	var bad []string
	c := p.Coefficient
	micro := math.Round(c * 1e6)
	switch {
	case math.IsNaN(c) || math.IsInf(c, 0) || c <= 0 || c > MaxPromoCoefficient:
		bad = append(bad, fmt.Sprintf("coefficient %v must be a number in (0, %d]", c, MaxPromoCoefficient))
	case micro < 1:
		bad = append(bad, fmt.Sprintf("coefficient %v is below 0.000001", c))
	}
	if p.TTLSeconds == 0 {
		p.TTLSeconds = int(DefaultPromoTTL / time.Second)
	}
	ttl := time.Duration(p.TTLSeconds) * time.Second
	if p.TTLSeconds < 0 || ttl > MaxPromoTTL {
		bad = append(bad, fmt.Sprintf("ttl_seconds %d must be from 1 to %d", p.TTLSeconds, int(MaxPromoTTL/time.Second)))
	}
	var acts []string
	for _, a := range p.Actions {
		if !knownAction(a) {
			bad = append(bad, fmt.Sprintf("unknown action %q (known: scan, pay, refund, sync)", a))
		} else if !slices.Contains(acts, a) {
			acts = append(acts, a)
		}
	}
	if len(bad) > 0 {
		return Promo{}, fmt.Errorf("%w: %s", ErrInvalidPromo, strings.Join(bad, "; "))
	}
	var now time.Time
	err := l.withDeadline(ctx, func(ctx context.Context) error {
		var err error
		now, err = l.rdb.Time(ctx).Result()
		return err
	})
	if err != nil {
		return Promo{}, fmt.Errorf("set promotion: read Redis time: %w", err)
	}
	now = now.UTC().Truncate(time.Millisecond)
	p.Coefficient, p.Actions, p.SetAt = micro/1e6, acts, now
	if p.StartsAt.IsZero() {
		p.StartsAt = now
	}
	p.StartsAt = p.StartsAt.UTC().Truncate(time.Millisecond)
	p.ExpiresAt = p.StartsAt.Add(ttl)
	if !p.ExpiresAt.After(now) {
		return Promo{}, fmt.Errorf("%w: starts_at %s + ttl_seconds %d ended before now (%s)",
			ErrInvalidPromo, p.StartsAt.Format(time.RFC3339), p.TTLSeconds, now.Format(time.RFC3339))
	}
	var prev *redis.MapStringStringCmd
	err = l.withDeadline(ctx, func(ctx context.Context) error {
		_, err := l.rdb.TxPipelined(ctx, func(tx redis.Pipeliner) error {
			prev = tx.HGetAll(ctx, l.promoKey)
			tx.Del(ctx, l.promoKey)
			tx.HSet(ctx, l.promoKey,
				"coef_micro", strconv.FormatInt(int64(micro), 10),
				"coefficient", strconv.FormatFloat(p.Coefficient, 'g', -1, 64),
				"starts_at", strconv.FormatInt(p.StartsAt.UnixMilli(), 10),
				"ttl_seconds", strconv.Itoa(p.TTLSeconds),
				"actions", strings.Join(acts, ","),
				"set_by", p.SetBy,
				"set_at", strconv.FormatInt(p.SetAt.UnixMilli(), 10),
				"expires_at", strconv.FormatInt(p.ExpiresAt.UnixMilli(), 10))
			tx.PExpireAt(ctx, l.promoKey, p.ExpiresAt)
			return nil
		})
		return err
	})
	if err != nil {
		return Promo{}, fmt.Errorf("set promotion: %w", err)
	}
	attrs := []any{"set_by", p.SetBy, "set_at", p.SetAt, "coefficient", p.Coefficient,
		"starts_at", p.StartsAt, "expires_at", p.ExpiresAt, "actions", strings.Join(acts, ",")}
	if old, err := parsePromo(prev.Val()); err == nil && old != nil {
		attrs = append(attrs, "replaced_coefficient", old.Coefficient, "replaced_set_by", old.SetBy,
			"replaced_expires_at", old.ExpiresAt)
	}
	l.log.Info("rate-limit promotion set", attrs...)
	return p, nil
}

// ClearPromo ends the current promotion now, logging who ended it.
func (l *Limiter) ClearPromo(ctx context.Context, by string) error {
	err := l.withDeadline(ctx, func(ctx context.Context) error {
		return l.rdb.Del(ctx, l.promoKey).Err()
	})
	if err != nil {
		return fmt.Errorf("clear promotion: %w", err)
	}
	l.log.Info("rate-limit promotion cleared", "set_by", by)
	return nil
}

// CurrentPromo returns the stored promotion — in effect, or scheduled
// with StartsAt still ahead — or nil when there is none.
func (l *Limiter) CurrentPromo(ctx context.Context) (*Promo, error) {
	var m map[string]string
	err := l.withDeadline(ctx, func(ctx context.Context) error {
		var err error
		m, err = l.rdb.HGetAll(ctx, l.promoKey).Result()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read promotion: %w", err)
	}
	p, err := parsePromo(m)
	if err != nil {
		return nil, fmt.Errorf("read promotion %s: %w", l.promoKey, err)
	}
	return p, nil
}

func parsePromo(m map[string]string) (*Promo, error) {
	if len(m) == 0 {
		return nil, nil
	}
	var errs []error
	num := func(k string) int64 {
		v, err := strconv.ParseInt(m[k], 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("field %s: %w", k, err))
		}
		return v
	}
	c, err := strconv.ParseFloat(m["coefficient"], 64)
	if err != nil {
		errs = append(errs, fmt.Errorf("field coefficient: %w", err))
	}
	p := &Promo{
		Coefficient: c,
		TTLSeconds:  int(num("ttl_seconds")),
		StartsAt:    time.UnixMilli(num("starts_at")).UTC(),
		SetBy:       m["set_by"],
		SetAt:       time.UnixMilli(num("set_at")).UTC(),
		ExpiresAt:   time.UnixMilli(num("expires_at")).UTC(),
	}
	if a := m["actions"]; a != "" {
		p.Actions = strings.Split(a, ",")
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}
