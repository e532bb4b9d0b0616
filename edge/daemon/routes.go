package daemon

import (
	"maps"
	"net/http"
)

// withRoutes merges sets of admin routes (by mux pattern) into one.
func withRoutes(sets ...map[string]http.Handler) map[string]http.Handler {
	out := map[string]http.Handler{}
	for _, s := range sets {
		maps.Copy(out, s)
	}
	return out
}
