package httpguard

import "testing"

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8081": true, "127.5.5.5:1": true, "localhost:8081": true, "[::1]:8081": true,
		"0.0.0.0:8081": false, "[::]:8081": false, ":8081": false, "192.168.1.2:8081": false,
		"hq.example:8090": false, "127.0.0.1": false, "": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
