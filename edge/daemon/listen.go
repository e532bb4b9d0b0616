package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
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
}

// newServers builds both servers: timeouts on each, TLS 1.2 or later
// where the config gives a key pair (tls, admin.tls).
func newServers(cfg *config.Config, term, admin http.Handler) (*servers, error) {
	s := &servers{}
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
	s.term = httpguard.NewServer(term, termCert)
	s.term.WriteTimeout = 30 * time.Second // terminal answers are small and quick
	s.admin = httpguard.NewServer(admin, adminCert)
	return s, nil
}

// reloadOnHUP reloads the certificates on SIGHUP until ctx ends: new
// handshakes get the new pair, open connections are not dropped. A pair
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
		}
	}
}
