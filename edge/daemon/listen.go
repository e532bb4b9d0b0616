package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/posedge/posedge/edge/config"
	"github.com/posedge/posedge/internal/httpguard"
)

// servers are the terminal and admin listeners' HTTP servers and the
// certificates SIGHUP reloads.
type servers struct {
	term, admin *http.Server
	certs       []*httpguard.Certificate
	cfgPath     string
	termKeys    map[string]string
	// terminals builds the terminal API for a set of keys (sha256 →
	// terminal id); nil = keys are not reloaded.
	terminals func(keys map[string]string) http.Handler
	termH     atomic.Pointer[http.Handler]
}

// newServers builds both servers: timeouts on each, TLS 1.2 or later
// where the config gives a key pair (tls, admin.tls).
func newServers(cfg *config.Config, term, admin http.Handler) (*servers, error) {
	s := &servers{cfgPath: cfg.Path, termKeys: cfg.TerminalKeys()}
	s.termH.Store(&term)
	load := func(key, certFile, keyFile string) (*httpguard.Certificate, error) {
		if certFile == "" {
			return nil, nil
		}
		c, err := httpguard.LoadCertificate(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		s.certs = append(s.certs, c)
		return c, nil
	}
	termCert, err := load("tls", cfg.TLS.CertFile, cfg.TLS.KeyFile)
	if err != nil {
		return nil, err
	}
	adminCert, err := load("admin.tls", cfg.Admin.TLS.CertFile, cfg.Admin.TLS.KeyFile)
	if err != nil {
		return nil, err
	}
	// The terminal handler is swapped whole when SIGHUP brings new keys;
	// requests in flight finish on the old one.
	s.term = httpguard.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*s.termH.Load()).ServeHTTP(w, r)
	}), termCert)
	s.term.WriteTimeout = 30 * time.Second // terminal answers are small and quick
	s.admin = httpguard.NewServer(admin, adminCert)
	return s, nil
}

// reloadTerminals reads the config file again and, when it is valid and
// its terminals changed, serves the terminal API with the new keys. Other
// changed keys take effect at the next restart only.
func (s *servers) reloadTerminals(log *slog.Logger) {
	if s.terminals == nil || s.cfgPath == "" {
		return
	}
	c, err := config.Load(s.cfgPath)
	if err != nil {
		log.Error("SIGHUP: config not reloaded, the terminal keys in use stay", "err", err)
		return
	}
	keys := c.TerminalKeys()
	if maps.Equal(keys, s.termKeys) {
		return
	}
	h := s.terminals(keys)
	s.termH.Store(&h)
	s.termKeys = keys
	log.Info("SIGHUP: terminal keys reloaded", "terminals", len(keys))
}

// reloadOnHUP reloads the certificates and the terminal keys on SIGHUP
// until ctx ends: new handshakes get the new pair, new requests the new
// keys; open connections are not dropped. A pair
// that does not load is logged and the old one kept. (Windows has no
// SIGHUP: restart the service there.)
func (s *servers) reloadOnHUP(ctx context.Context, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go s.reloadLoop(ctx, log, hup)
}

func (s *servers) reloadLoop(ctx context.Context, log *slog.Logger, hup chan os.Signal) {
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			for _, c := range s.certs {
				if err := c.Reload(); err != nil {
					log.Error("SIGHUP: certificate not reloaded, the old one stays in use", "err", err)
					continue
				}
			}
			log.Info("SIGHUP: certificates reloaded", "count", len(s.certs))
			s.reloadTerminals(log)
		}
	}
}
