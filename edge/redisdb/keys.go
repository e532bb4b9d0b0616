package redisdb

import "strings"

// Keys builds the Redis key names of one store: this file is the one
// place that knows them (the Lua scripts in lua/ take them as KEYS).
// Every key carries the store as a hash tag so a store's keys can live on
// one Redis Cluster slot, and a script may touch them together:
//
//	pe:{S}:idem:<terminal>:<key>  idempotency record of a sale or refund
//	pe:{S}:seq                    flow number sequence
//	pe:{S}:daily:<day>            day totals
//	pe:{S}:hourly:<day>           hour totals of a day
//	pe:{S}:token:<token>          payment token
//	pe:{S}:refunded:<flow>        what refunds took back of a sale
//	pe:{S}:item:<barcode>         item master entry and stock
//	pe:{S}:adj:<key>              stock adjustment record
//	pe:{S}:lock:<job>             job lock (its fencing counter: Fence)
//	pe:{S}:alive                  instance id of the daemon that pinged last
//	pe:{S}:repaired               set by the last repair; gone when Redis lost its data
//	pe:{S}:rl:s                   rate limit, store level (all terminals)
//	pe:{S}:rl:t:<terminal>        rate limit, terminal level
//	pe:{S}:rl:a:<terminal>:<act>  rate limit, action level, per terminal
//	pe:{S}:rl:sync                store-wide HQ replay budget (all daemons)
//	pe:{S}:promo                  promotion hash
type Keys struct{ p string }

// NewKeys returns the key builder of store.
func NewKeys(store string) Keys { return Keys{p: Prefix(store)} }

// Prefix is the start of every key of store.
func Prefix(store string) string { return "pe:{" + store + "}:" }

// Idem is the idempotency record of (terminal, key).
func (k Keys) Idem(term, key string) string { return k.p + "idem:" + term + ":" + key }

// Seq is the flow number sequence.
func (k Keys) Seq() string { return k.p + "seq" }

// Daily holds the totals of a business day.
func (k Keys) Daily(day string) string { return k.p + "daily:" + day }

// Hourly holds the hour totals of a business day.
func (k Keys) Hourly(day string) string { return k.p + "hourly:" + day }

// Token is a payment token.
func (k Keys) Token(tok string) string { return k.p + "token:" + tok }

// Refunded holds what refunds took back of the sale flow.
func (k Keys) Refunded(flow string) string { return k.p + "refunded:" + flow }

// Item is an item of the item master, with its stock.
func (k Keys) Item(barcode string) string { return k.p + "item:" + barcode }

// Adjustment is the record of the stock adjustment with idempotency key key.
func (k Keys) Adjustment(key string) string { return k.p + "adj:" + key }

// Lock is the lock of job; Fence adds its fencing counter.
func (k Keys) Lock(job string) string { return k.p + "lock:" + job }

// Alive holds the instance id of the daemon that pinged last.
func (k Keys) Alive() string { return k.p + "alive" }

// Repaired is set by the last repair; gone when Redis lost its data.
func (k Keys) Repaired() string { return k.p + "repaired" }

// RateStore is the store level of the rate limiter (all terminals).
func (k Keys) RateStore() string { return k.p + "rl:s" }

// RateTerminal is the terminal level of the rate limiter.
func (k Keys) RateTerminal(term string) string { return k.p + "rl:t:" + term }

// RateAction is the action level of the rate limiter, per terminal.
func (k Keys) RateAction(term, action string) string { return k.p + "rl:a:" + term + ":" + action }

// RateSync is the store-wide HQ replay budget (all daemons).
func (k Keys) RateSync() string { return k.p + "rl:sync" }

// Promo is the promotion hash.
func (k Keys) Promo() string { return k.p + "promo" }

// IdemScan is the SCAN pattern of every idempotency record.
func (k Keys) IdemScan() string { return k.p + "idem:*" }

// IdemOf reads the terminal and key back from an idempotency record's key.
func (k Keys) IdemOf(key string) (term, idem string, ok bool) {
	rest, ok := strings.CutPrefix(key, k.p+"idem:")
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, ":")
}

// Fence is the key holding the fencing counter of the lock at key.
func Fence(lockKey string) string { return lockKey + ":fence" }
