// Package configcheck is how posedge and posedge-hq tell an operator what
// is wrong with a config file, in one style: the file, then every
// problem at once, each naming its key (Litestream's ConfigValidationError,
// nats-server's collected errors); a syntax error as line, column and key.
package configcheck
