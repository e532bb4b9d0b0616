package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/edge/redisdb"
	"github.com/posedge/posedge/offline/journal"
)

// Item is an item-master entry as a terminal sees it.
type Item struct {
	Barcode    string `json:"barcode"`
	Name       string `json:"name"`
	PriceCents int64  `json:"price_cents"`
	Stock      int64  `json:"stock"`
	Stale      bool   `json:"stale"`
}

// PutItem upserts an item in Redis and in the daemon's own copy.
func (l *Ledger) PutItem(ctx context.Context, it Item) error {
	rctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
	defer cancel()
	err := l.rdb.HSet(rctx, l.k.Item(it.Barcode), "name", it.Name, "price_cents", it.PriceCents, "stock", it.Stock).Err()
	if err != nil {
		if outage(ctx, err) {
			l.SetRedisDown(true)
			return errRedisUnavailable("writing the item master")
		}
		return err
	}
	if err := l.j.PutItem(ctx, journal.Item{Barcode: it.Barcode, Name: it.Name, PriceCents: it.PriceCents,
		Stock: it.Stock, UpdatedAt: l.now()}); err != nil {
		return errJournal(err)
	}
	return nil
}

// Item looks an item up in Redis, or in the daemon's copy (stale) while
// Redis is down.
func (l *Ledger) Item(ctx context.Context, barcode string) (*Item, error) {
	if l.Degraded() {
		return l.staleItem(ctx, barcode)
	}
	rctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
	defer cancel()
	return l.itemReply(ctx, barcode, redisdb.ReadItem(rctx, l.rdb, l.k.Item(barcode)))
}

// ItemRead is the read of barcode's item, for a caller that shares
// another round trip (the rate limiter's decision) and then hands the
// reply to ItemFrom. It queues nothing (the reply stays the zero one)
// while the ledger is degraded (ItemFrom then reads the daemon's copy) or
// for an invalid barcode (no key is made of it).
func (l *Ledger) ItemRead(barcode string) redisdb.Read {
	return func(ctx context.Context, p redis.Pipeliner) redis.Cmder {
		if l.Degraded() || !ValidBarcode(barcode) {
			return nil
		}
		return redisdb.ReadItem(ctx, p, l.k.Item(barcode))
	}
}

// ItemFrom is Item from the reply of an ItemRead. A zero reply
// (the read did not run: nothing was queued, or the round trip failed
// before its reply) makes it look the item up as Item does.
func (l *Ledger) ItemFrom(ctx context.Context, barcode string, reply redisdb.Reply) (*Item, error) {
	hm, ok := reply.ItemReply()
	if l.Degraded() || !ok {
		return l.Item(ctx, barcode)
	}
	return l.itemReply(ctx, barcode, hm)
}

// itemReply reads the reply of a redisdb.ReadItem; an outage makes the
// ledger degraded and answers from the daemon's copy.
func (l *Ledger) itemReply(ctx context.Context, barcode string, hm *redis.SliceCmd) (*Item, error) {
	m, err := hm.Result()
	if err == nil {
		// Never known, or deactivated by HQ's catalog (active "0").
		if len(m) != redisdb.NumItemFields || m[0] == nil || str(m[3]) == "0" {
			return nil, Errorf(KindNotFound, "item_not_found", "barcode %s is not in the item master", barcode)
		}
		it := &Item{Barcode: barcode, Name: str(m[0])}
		it.PriceCents, _ = strconv.ParseInt(str(m[1]), 10, 64)
		it.Stock, _ = strconv.ParseInt(str(m[2]), 10, 64)
		return it, nil
	}
	if !outage(ctx, err) {
		return nil, err
	}
	l.SetRedisDown(true)
	return l.staleItem(ctx, barcode)
}

// staleItem is the daemon's own copy of an item, marked stale.
func (l *Ledger) staleItem(ctx context.Context, barcode string) (*Item, error) {
	c, err := l.j.Item(ctx, barcode)
	if err != nil {
		return nil, errJournal(err)
	}
	if c == nil {
		return nil, errRedisUnavailable("looking up an item the daemon has never seen")
	}
	if !c.Active {
		return nil, Errorf(KindNotFound, "item_not_found", "barcode %s is not in the item master", barcode)
	}
	return &Item{Barcode: c.Barcode, Name: c.Name, PriceCents: c.PriceCents, Stock: c.Stock, Stale: true}, nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// TokenTTL is how long an unused payment token stays valid.
const TokenTTL = 5 * time.Minute

// Token is a one-time payment token.
type Token struct {
	Token     string `json:"token"`
	ExpiresAt string `json:"expires_at"`
}

// NewToken issues a one-time payment token bound to the terminal.
func (l *Ledger) NewToken(ctx context.Context, term string) (*Token, error) {
	if l.Degraded() {
		return nil, errRedisUnavailable("issuing a payment token")
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	tok := "pt_" + hex.EncodeToString(b[:])
	rctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
	defer cancel()
	pipe := l.rdb.TxPipeline()
	pipe.HSet(rctx, l.k.Token(tok), "terminal", term, "state", "PENDING")
	pipe.Expire(rctx, l.k.Token(tok), TokenTTL)
	if _, err := pipe.Exec(rctx); err != nil {
		if outage(ctx, err) {
			l.SetRedisDown(true)
			return nil, errRedisUnavailable("issuing a payment token")
		}
		return nil, err
	}
	return &Token{Token: tok, ExpiresAt: l.now().Add(TokenTTL).UTC().Format(time.RFC3339)}, nil
}

// Ping checks that Redis answers and takes writes: what decides degraded
// mode. It writes a small key so OOM, READONLY and MISCONF show.
func (l *Ledger) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
	defer cancel()
	err := l.rdb.Set(ctx, l.k.Alive(), l.owner, time.Minute).Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	return nil
}
