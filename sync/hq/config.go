package hq

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/posedge/posedge/internal/cents"
	"github.com/posedge/posedge/internal/configcheck"

	"github.com/goccy/go-yaml"
	"github.com/jackc/pgx/v5"

	"github.com/posedge/posedge/internal/httpguard"
	"github.com/posedge/posedge/internal/natsurl"
	"github.com/posedge/posedge/internal/parseguard"
	"github.com/posedge/posedge/internal/secret"
	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/wire"
)

// DefaultConfigPath is where posedge-hq looks for its config by default.
const DefaultConfigPath = "/etc/posedge/posedge-hq.yaml"

// Defaults of the optional keys.
const (
	DefaultDatabase        = "sqlite:///var/lib/posedge-hq/hq.db"
	DefaultAdminListen     = "127.0.0.1:8090"
	DefaultBatchSize       = 256
	DefaultDuplicateWindow = 2 * time.Minute
	DefaultAckWait         = 30 * time.Second
	DefaultStreamReplicas  = 1
	// The stream's limits (docs/hq-sync.md, "Stream limits"): two weeks
	// of a busy store's messages on each of its subjects, so a week-long
	// HQ outage fits with a week to spare; 16 GiB for the whole stream.
	DefaultStreamMaxAge            = 14 * 24 * time.Hour
	DefaultStreamMaxMsgsPerSubject = 1_000_000
	DefaultStreamMaxBytes          = 16 << 30
	minStreamMaxBytes              = 1 << 20
	minStreamMaxMsgsPerSubject     = 100
	DefaultCatalogBucket           = wire.DefaultCatalogBucket // the store follows the same bucket
	maxBatchSize                   = 10000
	// DefaultGCPercent is gc_percent: Go's GOGC for posedge-hq. Go's
	// own 100 spent a fifth of posedge-hq's CPU a row collecting
	// garbage while it ingested (docs/performance.md, "posedge-hq's
	// garbage collector"); an HQ host has the memory to collect less
	// often. The store's daemon keeps Go's default: it lives on a
	// router's RAM.
	DefaultGCPercent = 400
	minGCPercent     = 25
	maxGCPercent     = 10000
)

// ErrNoConfig means the config file does not exist (as opposed to
// existing and being wrong): errors.Is(err, ErrNoConfig).
var ErrNoConfig = errors.New("config file not found")

// Config is posedge-hq's configuration, defaults applied and validated.
type Config struct {
	NATSURL         string
	CredsFile       string
	TLS             TLSConfig
	Stream          string
	SubjectPrefix   string
	DuplicateWindow time.Duration
	StreamReplicas  int // copies of the stream in a JetStream cluster: 1, 3 or 5
	// The stream's limits. A publish past one is refused (DiscardNew,
	// per subject too): the store keeps the row and sends it again.
	StreamMaxAge            time.Duration
	StreamMaxBytes          int64  // the whole stream
	StreamMaxMsgsPerSubject int64  // each subject: one store's sales, heartbeats, manifests or adjustments
	Database                string // sqlite://PATH or postgres://…
	AdminListen             string
	AdminTokenFile          string   // bearer token of the admin API; required unless AdminListen is loopback
	AdminTLS                AdminTLS // optional TLS of the admin listener
	BatchSize               int
	SilentAfter             time.Duration
	AckWait                 time.Duration // how long JetStream waits for an ack before redelivering
	CatalogBucket           string        // JetStream key-value bucket of the item master

	// MaxSaleCents bounds every price, line and total of a stored
	// transaction; a message above it is quarantined (docs/hq-sync.md).
	// It is also the largest price the catalog accepts.
	MaxSaleCents int64

	// GCPercent is the garbage collector's target (Go's GOGC) posedge-hq
	// runs with, unless the GOGC environment variable is set: that wins.
	GCPercent int
}

// TLSConfig is the optional TLS setup of the NATS connection.
type TLSConfig struct {
	CAFile   string
	CertFile string
	KeyFile  string
}

// AdminTLS is the optional certificate of the admin listener.
type AdminTLS struct {
	CertFile string
	KeyFile  string
}

// DefaultConfig is the configuration with every default set and no
// nats_url (which has none).
func DefaultConfig() Config {
	return Config{
		Stream:          wire.DefaultStream,
		SubjectPrefix:   wire.DefaultSubjectPrefix,
		DuplicateWindow: DefaultDuplicateWindow,
		StreamReplicas:  DefaultStreamReplicas,

		StreamMaxAge:            DefaultStreamMaxAge,
		StreamMaxBytes:          DefaultStreamMaxBytes,
		StreamMaxMsgsPerSubject: DefaultStreamMaxMsgsPerSubject,
		Database:                DefaultDatabase,
		AdminListen:             DefaultAdminListen,
		BatchSize:               DefaultBatchSize,
		SilentAfter:             hqdb.DefaultSilentAfter,
		AckWait:                 DefaultAckWait,
		CatalogBucket:           DefaultCatalogBucket,
		MaxSaleCents:            cents.DefaultMaxSaleCents,
		GCPercent:               DefaultGCPercent,
	}
}

// fileConfig is the YAML as written. Scalars are read as strings so that
// a wrong value is reported by key name rather than by Go type.
type fileConfig struct {
	NATSURL         *string        `yaml:"nats_url"`
	CredsFile       *string        `yaml:"creds_file"`
	TLS             *fileTLSConfig `yaml:"tls"`
	Stream          *string        `yaml:"stream"`
	SubjectPrefix   *string        `yaml:"subject_prefix"`
	DuplicateWindow *string        `yaml:"duplicate_window"`
	StreamReplicas  *string        `yaml:"stream_replicas"`

	StreamMaxAge            *string `yaml:"stream_max_age"`
	StreamMaxBytes          *string `yaml:"stream_max_bytes"`
	StreamMaxMsgsPerSubject *string `yaml:"stream_max_msgs_per_subject"`
	Database                *string `yaml:"database"`
	Admin                   *struct {
		Listen    *string `yaml:"listen"`
		TokenFile *string `yaml:"token_file"`
		TLS       *struct {
			CertFile *string `yaml:"cert_file"`
			KeyFile  *string `yaml:"key_file"`
		} `yaml:"tls"`
	} `yaml:"admin"`
	BatchSize     *string `yaml:"batch_size"`
	SilentAfter   *string `yaml:"silent_after"`
	AckWait       *string `yaml:"ack_wait"`
	CatalogBucket *string `yaml:"catalog_bucket"`

	MaxSaleCents *string `yaml:"max_sale_cents"`
	GCPercent    *string `yaml:"gc_percent"`
}

type fileTLSConfig struct {
	CAFile   *string `yaml:"ca_file"`
	CertFile *string `yaml:"cert_file"`
	KeyFile  *string `yaml:"key_file"`
}

// ConfigError is one problem with one key of the config file;
// ValidationError is every problem found, reported at once. posedge's
// config answers in the same style (internal/configcheck).
type (
	ConfigError     = configcheck.Problem
	ValidationError = configcheck.Problems
)

// LoadConfig reads, parses and validates the YAML config at path. Every
// problem is reported at once, each naming the file and the key.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, fmt.Errorf("%s: %w", path, ErrNoConfig)
	}
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	return ParseConfig(path, data)
}

// ParseConfig parses and validates config data; file names it in errors.
func ParseConfig(file string, data []byte) (Config, error) {
	var fc fileConfig
	// A panic inside the YAML library is a named error with file and line.
	if err := parseguard.Bytes(file, data, func(src []byte) error {
		fc = fileConfig{}
		return yaml.UnmarshalWithOptions(src, &fc, yaml.Strict())
	}); err != nil {
		var pe *parseguard.PanicError
		if errors.As(err, &pe) {
			return Config{}, err
		}
		// Line, column and key, never the source lines goccy/go-yaml
		// prints around them (a secret may stand next to the typo).
		return Config{}, fmt.Errorf("%s: %w", file, configcheck.Syntax(err, data))
	}
	var v validator
	v.controlChars(&fc)
	c := DefaultConfig()
	str := func(dst *string, src *string) {
		if src != nil {
			*dst = strings.TrimSpace(*src)
		}
	}
	str(&c.NATSURL, fc.NATSURL)
	str(&c.CredsFile, fc.CredsFile)
	if fc.TLS != nil {
		str(&c.TLS.CAFile, fc.TLS.CAFile)
		str(&c.TLS.CertFile, fc.TLS.CertFile)
		str(&c.TLS.KeyFile, fc.TLS.KeyFile)
	}
	str(&c.Stream, fc.Stream)
	str(&c.SubjectPrefix, fc.SubjectPrefix)
	str(&c.Database, fc.Database)
	str(&c.CatalogBucket, fc.CatalogBucket)
	if fc.Admin != nil {
		str(&c.AdminListen, fc.Admin.Listen)
		str(&c.AdminTokenFile, fc.Admin.TokenFile)
		if fc.Admin.TLS != nil {
			str(&c.AdminTLS.CertFile, fc.Admin.TLS.CertFile)
			str(&c.AdminTLS.KeyFile, fc.Admin.TLS.KeyFile)
		}
	}
	v.duration(&c.DuplicateWindow, "duplicate_window", fc.DuplicateWindow, time.Second, 0)
	v.duration(&c.StreamMaxAge, "stream_max_age", fc.StreamMaxAge, time.Second, 0)
	v.count(&c.StreamMaxBytes, "stream_max_bytes", fc.StreamMaxBytes, minStreamMaxBytes)
	v.count(&c.StreamMaxMsgsPerSubject, "stream_max_msgs_per_subject", fc.StreamMaxMsgsPerSubject, minStreamMaxMsgsPerSubject)
	v.duration(&c.SilentAfter, "silent_after", fc.SilentAfter, time.Second, 0)
	v.duration(&c.AckWait, "ack_wait", fc.AckWait, time.Second, 10*time.Minute)
	if fc.BatchSize != nil {
		n, err := strconv.Atoi(strings.TrimSpace(*fc.BatchSize))
		switch {
		case err != nil:
			v.add("batch_size", *fc.BatchSize, errors.New("not a whole number"))
		case n < 1 || n > maxBatchSize:
			v.add("batch_size", *fc.BatchSize, fmt.Errorf("must be between 1 and %d", maxBatchSize))
		default:
			c.BatchSize = n
		}
	}
	if fc.GCPercent != nil {
		n, err := strconv.Atoi(strings.TrimSpace(*fc.GCPercent))
		switch {
		case err != nil:
			v.add("gc_percent", *fc.GCPercent, errors.New("not a whole number"))
		case n < minGCPercent || n > maxGCPercent:
			v.add("gc_percent", *fc.GCPercent, fmt.Errorf("must be between %d and %d", minGCPercent, maxGCPercent))
		default:
			c.GCPercent = n
		}
	}
	if fc.MaxSaleCents != nil {
		n, err := strconv.ParseInt(strings.TrimSpace(*fc.MaxSaleCents), 10, 64)
		switch {
		case err != nil:
			v.add("max_sale_cents", *fc.MaxSaleCents, errors.New("not a whole number of cents"))
		case n < 1 || n > cents.MaxSaleCentsCeiling:
			v.add("max_sale_cents", *fc.MaxSaleCents, fmt.Errorf("must be between 1 and %d", cents.MaxSaleCentsCeiling))
		default:
			c.MaxSaleCents = n
		}
	}
	if fc.StreamReplicas != nil {
		n, err := strconv.Atoi(strings.TrimSpace(*fc.StreamReplicas))
		switch {
		case err != nil:
			v.add("stream_replicas", *fc.StreamReplicas, errors.New("not a whole number"))
		case n != 1 && n != 3 && n != 5:
			v.add("stream_replicas", *fc.StreamReplicas, errors.New("must be 1, 3 or 5 (an odd number, for a quorum; 3 or 5 need a JetStream cluster of at least as many servers)"))
		default:
			c.StreamReplicas = n
		}
	}
	c.validate(&v)
	if len(v.problems) > 0 {
		return Config{}, fmt.Errorf("%s: %w", file, v.problems)
	}
	return c, nil
}

type validator struct {
	problems configcheck.Problems
}

func (v *validator) add(key, value string, err error) { v.problems.Add(key, value, err) }

func (v *validator) duration(dst *time.Duration, key string, src *string, min, max time.Duration) {
	if src == nil {
		return
	}
	d, err := time.ParseDuration(strings.TrimSpace(*src))
	switch {
	case err != nil:
		v.add(key, *src, errors.New(`not a duration (e.g. "90s", "2m", "1h")`))
	case d < min:
		v.add(key, *src, fmt.Errorf("must be at least %v", min))
	case max > 0 && d > max:
		v.add(key, *src, fmt.Errorf("must be at most %v", max))
	default:
		*dst = d
	}
}

// count reads a whole number of at least min into dst.
func (v *validator) count(dst *int64, key string, src *string, min int64) {
	if src == nil {
		return
	}
	n, err := strconv.ParseInt(strings.TrimSpace(*src), 10, 64)
	switch {
	case err != nil:
		v.add(key, *src, errors.New("not a whole number"))
	case n < min:
		v.add(key, *src, fmt.Errorf("must be at least %d", min))
	default:
		*dst = n
	}
}

var (
	streamName   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	subjectToken = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
)

func (c *Config) validate(v *validator) {
	if err := natsurl.Check(c.NATSURL); err != nil {
		v.add("nats_url", natsurl.Redact(c.NATSURL), err)
	}
	v.file0("creds_file", c.CredsFile)
	v.file0("tls.ca_file", c.TLS.CAFile)
	v.file0("tls.cert_file", c.TLS.CertFile)
	v.file0("tls.key_file", c.TLS.KeyFile)
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		v.add("tls", "", errors.New("cert_file and key_file go together: set both or neither"))
	}
	if !streamName.MatchString(c.Stream) {
		v.add("stream", c.Stream, errors.New("must be 1-64 of [A-Za-z0-9_-]"))
	}
	if !streamName.MatchString(c.CatalogBucket) {
		v.add("catalog_bucket", c.CatalogBucket, errors.New("must be 1-64 of [A-Za-z0-9_-]"))
	}
	if c.StreamMaxAge < c.DuplicateWindow {
		// JetStream refuses the stream otherwise: its duplicate check
		// needs the messages it remembers.
		v.add("stream_max_age", c.StreamMaxAge.String(), fmt.Errorf("must be at least duplicate_window (%v)", c.DuplicateWindow))
	}
	if err := checkSubjectPrefix(c.SubjectPrefix); err != nil {
		v.add("subject_prefix", c.SubjectPrefix, err)
	}
	if _, err := ParseDatabaseURL(c.Database); err != nil {
		v.add("database", redactURL(c.Database), err)
	}
	if _, port, err := net.SplitHostPort(c.AdminListen); err != nil {
		v.add("admin.listen", c.AdminListen, errors.New(`not host:port (e.g. "127.0.0.1:8090")`))
	} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		v.add("admin.listen", c.AdminListen, errors.New("bad port"))
	}
	switch {
	case c.AdminTokenFile != "":
		if _, err := secret.ReadToken(c.AdminTokenFile); err != nil {
			v.add("admin.token_file", "", err)
		}
	case !isLoopback(c.AdminListen) && validHostPort(c.AdminListen):
		v.add("admin.token_file", "", fmt.Errorf("required because admin.listen %q is not a loopback address", c.AdminListen))
	}
	v.file0("admin.tls.cert_file", c.AdminTLS.CertFile)
	v.file0("admin.tls.key_file", c.AdminTLS.KeyFile)
	if (c.AdminTLS.CertFile == "") != (c.AdminTLS.KeyFile == "") {
		v.add("admin.tls", "", errors.New("cert_file and key_file go together: set both or neither"))
	}
}

// AdminToken reads admin.token_file; "" when none is set.
func (c *Config) AdminToken() (string, error) {
	if c.AdminTokenFile == "" {
		return "", nil
	}
	return secret.ReadToken(c.AdminTokenFile)
}

func validHostPort(s string) bool {
	_, _, err := net.SplitHostPort(s)
	return err == nil
}

// isLoopback reports whether a host:port listens on loopback only.
func isLoopback(hostport string) bool { return httpguard.IsLoopback(hostport) }

// file0 checks that an optional file setting names a readable file.
func (v *validator) file0(key, path string) {
	if path == "" {
		return
	}
	f, err := os.Open(path)
	if err != nil {
		v.add(key, path, fmt.Errorf("cannot read: %w", errors.Unwrap(err)))
		return
	}
	f.Close()
}

func checkSubjectPrefix(p string) error {
	if p == "" {
		return errors.New("required")
	}
	for _, tok := range strings.Split(p, ".") {
		if !subjectToken.MatchString(tok) {
			return errors.New("must be dot-separated tokens of [A-Za-z0-9_-] (no wildcards)")
		}
	}
	if p == wire.HaveSubjectPrefix || strings.HasPrefix(wire.HaveSubjectPrefix, p+".") ||
		strings.HasPrefix(p, wire.HaveSubjectPrefix+".") {
		return fmt.Errorf("must not overlap %s.*, where posedge-hq answers stores' requests", wire.HaveSubjectPrefix)
	}
	return nil
}

// DatabaseKind tells the supported databases apart.
type DatabaseKind string

// Supported databases.
const (
	SQLite   DatabaseKind = "sqlite"
	Postgres DatabaseKind = "postgres"
)

// DatabaseURL is a parsed `database` setting.
type DatabaseURL struct {
	Kind DatabaseKind
	Path string // SQLite file
	URL  string // PostgreSQL connection string
}

// ParseDatabaseURL parses "sqlite:///abs/path.db", "sqlite://rel/path.db"
// or "postgres://…" (also "postgresql://…").
func ParseDatabaseURL(s string) (DatabaseURL, error) {
	switch {
	case strings.HasPrefix(s, "sqlite://"):
		p := strings.TrimPrefix(s, "sqlite://")
		if p == "" || strings.HasSuffix(p, "/") {
			return DatabaseURL{}, errors.New(`sqlite URL names no file (e.g. "sqlite:///var/lib/posedge-hq/hq.db")`)
		}
		if strings.ContainsAny(p, "?#") {
			return DatabaseURL{}, errors.New("sqlite URL takes no query or fragment: posedge-hq sets the pragmas itself")
		}
		return DatabaseURL{Kind: SQLite, Path: p}, nil
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		if _, err := pgx.ParseConfig(s); err != nil {
			return DatabaseURL{}, errors.New("not a valid PostgreSQL URL (e.g. \"postgres://user@host:5432/hq\")")
		}
		return DatabaseURL{Kind: Postgres, URL: s}, nil
	default:
		return DatabaseURL{}, errors.New(`must start with sqlite:// (e.g. "sqlite:///var/lib/posedge-hq/hq.db") or postgres://`)
	}
}

// redactURL hides the credentials of a database or NATS URL (or a
// comma-separated list of them) before it is printed.
func redactURL(s string) string { return secret.RedactURLs(s) }
