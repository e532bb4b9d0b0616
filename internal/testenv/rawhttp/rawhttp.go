// Package rawhttp sends a request line exactly as a test writes it: no
// client cleans, escapes or redirects it, so a test can show what a
// listener answers to a path net/http's client would never send (the
// unclean-path tests of both daemons).
package rawhttp

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Get sends "GET path" to base (an http:// URL) with Host host (""
// means the listener's own address, as any local client sends it) and
// a bearer token when auth is set, and reads the one answer, redirects
// not followed. A failure to dial, write or read fails t.
func Get(t testing.TB, base, path, host, auth string) (*http.Response, []byte) {
	t.Helper()
	addr := strings.TrimPrefix(base, "http://")
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if host == "" {
		host = addr
	}
	req := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n"
	if auth != "" {
		req += "Authorization: Bearer " + auth + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}
