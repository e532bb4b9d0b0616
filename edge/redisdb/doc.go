// Package redisdb owns the store's Redis: the whole key layout (every key
// of a store starts with the one prefix built here), each Lua script's
// typed call (KEYS and ARGV built in one place, beside the script's name;
// the scripts themselves and their tests stay in lua/), the "Redis
// unavailable" classification of an error, and the opaque read a caller
// pipelines into another call's round trip. Money logic stays in
// edge/ledger, which calls this package; edge/api never sees go-redis.
package redisdb
