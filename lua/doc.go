// Package lua embeds posedge's Redis Lua scripts (go:embed), so every
// atomic step on Redis is one reviewed, tested file in this folder.
package lua
