package hq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/httpguard"
	"github.com/posedge/posedge/internal/natsurl"
	"github.com/posedge/posedge/sync/hqdb"
)

// Server is a posedge-hq process: its database, the receiver and the
// admin listener.
type Server struct {
	cfg     Config
	log     *slog.Logger
	version string
}

// NewServer returns a server for cfg; Run starts it.
func NewServer(cfg Config, log *slog.Logger, version string) *Server {
	return &Server{cfg: cfg, log: log, version: version}
}

// Run opens the database, listens on admin.listen and receives until ctx
// is done. It fails at once when the database cannot be opened or the
// admin address is taken; an unreachable NATS is waited for.
func (s *Server) Run(ctx context.Context) error {
	s.log.Info("posedge-hq starting", "version", s.version, "nats_url", natsurl.Redact(s.cfg.NATSURL), "stream", s.cfg.Stream,
		"subject_prefix", s.cfg.SubjectPrefix, "catalog_bucket", s.cfg.CatalogBucket, "database", redactURL(s.cfg.Database), "admin_listen", s.cfg.AdminListen)
	store, err := OpenStore(ctx, s.cfg.Database, hqdb.StoreOptions{SilentAfter: s.cfg.SilentAfter, Logger: s.log})
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer store.Close()
	metrics := NewMetrics(store, s.version, s.log)
	recv := NewReceiver(s.cfg, store, metrics, s.log, "")
	metrics.ObserveReceiver(recv, store, s.log)

	// The catalog has a connection of its own: its writes never queue
	// behind the receiver's batches.
	catNC, err := connectNATS(s.cfg, "posedge-hq catalog", s.log)
	if err != nil {
		return err
	}
	defer catNC.Close()
	catJS, err := jetstream.New(catNC)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	// The catalog routes sit behind the same token, TLS and clean-path
	// guard as every other admin route.
	mux := http.NewServeMux()
	cat := NewCatalog(s.cfg, catJS)
	go cat.Ensure(ctx, s.log)
	mux.Handle("/admin/v1/catalog/", NewCatalogHandler(cat, s.cfg.MaxSaleCents, s.log))
	mux.Handle("/", NewAdminHandler(store, recv, metrics, s.log))
	srv, err := s.adminServer(httpguard.CleanPaths(mux))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.cfg.AdminListen)
	if err != nil {
		return fmt.Errorf("admin.listen: %w", err)
	}
	served := make(chan error, 1)
	go func() { served <- httpguard.Serve(srv, ln) }()

	rerr := recv.Run(ctx)

	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if err := <-served; err != nil {
		return errors.Join(rerr, fmt.Errorf("admin listener: %w", err))
	}
	s.log.Info("posedge-hq stopped")
	return rerr
}

// adminServer wraps the admin API in the bearer check (admin.token_file;
// /healthz stays open for load balancers; 10 failures a minute per
// address, then 429) and serves it with timeouts and, with admin.tls,
// TLS 1.2 or later.
func (s *Server) adminServer(h http.Handler) (*http.Server, error) {
	tok, err := s.cfg.AdminToken()
	if err != nil {
		return nil, fmt.Errorf("admin.token_file: %w", err)
	}
	var cert *httpguard.Certificate
	if s.cfg.AdminTLS.CertFile != "" {
		if cert, err = httpguard.LoadCertificate(s.cfg.AdminTLS.CertFile, s.cfg.AdminTLS.KeyFile); err != nil {
			return nil, fmt.Errorf("admin.tls: %w", err)
		}
	}
	guard := httpguard.NewAuthGuard(10, time.Minute, time.Now)
	open := func(r *http.Request) bool { return r.URL.Path == "/healthz" }
	srv := httpguard.NewServer(httpguard.RequireBearer(tok, guard, open, h), cert)
	srv.ErrorLog = slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
	return srv, nil
}
