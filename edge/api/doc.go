// Package api serves posedge over HTTP/JSON: the terminal API on the LAN
// listener and the admin API (health, metrics, status, items, promotions,
// stats) on the admin listener (contract §3, §4).
package api
