package httpguard

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Timeouts of the admin listeners: a client that opens connections and
// sends nothing, or dribbles a request, is cut off; answers have no write
// deadline, as a reconciliation may take minutes.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 30 * time.Second
	IdleTimeout       = 2 * time.Minute
)

// Certificate is a TLS key pair that Reload swaps in place: connections
// open keep the one they started with, new handshakes get the new one.
type Certificate struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// LoadCertificate reads a PEM key pair.
func LoadCertificate(certFile, keyFile string) (*Certificate, error) {
	c := &Certificate{certFile: certFile, keyFile: keyFile}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload reads the files again; on error the certificate in use stays.
func (c *Certificate) Reload() error {
	kp, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("load TLS key pair %s, %s: %w", c.certFile, c.keyFile, err)
	}
	c.cur.Store(&kp)
	return nil
}

// TLSConfig is a server config with TLS 1.2 or later and this
// certificate.
func (c *Certificate) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		return c.cur.Load(), nil
	}}
}

// NewServer is an http.Server with the timeouts above and, when cert is
// not nil, TLS 1.2 or later.
func NewServer(h http.Handler, cert *Certificate) *http.Server {
	s := &http.Server{Handler: h, ReadHeaderTimeout: ReadHeaderTimeout, ReadTimeout: ReadTimeout, IdleTimeout: IdleTimeout}
	if cert != nil {
		s.TLSConfig = cert.TLSConfig()
	}
	return s
}

// Serve serves s on ln, over TLS when s has a TLS config; a Shutdown is
// not an error.
func Serve(s *http.Server, ln net.Listener) error {
	var err error
	if s.TLSConfig != nil {
		err = s.ServeTLS(ln, "", "")
	} else {
		err = s.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("serve %s: %w", ln.Addr(), err)
}
