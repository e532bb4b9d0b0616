package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/goccy/go-yaml"

	"github.com/posedge/posedge/edge/ratelimit"
	"github.com/posedge/posedge/internal/cents"
	"github.com/posedge/posedge/internal/configcheck"
	"github.com/posedge/posedge/internal/httpguard"
	"github.com/posedge/posedge/internal/natsurl"
	"github.com/posedge/posedge/internal/parseguard"
	"github.com/posedge/posedge/internal/secret"
)

// ErrNoConfig means the config file does not exist, as opposed to a file
// that exists but is wrong (errors.Is tells them apart).
var ErrNoConfig = errors.New("no config file")

// DefaultPath is where the service looks for its config.
func DefaultPath() string {
	if runtime.GOOS == "windows" {
		pd := os.Getenv("ProgramData")
		if pd == "" {
			pd = `C:\ProgramData`
		}
		return pd + `\posedge\posedge.yaml`
	}
	return "/etc/posedge/posedge.yaml"
}

// Duration is a time.Duration written as "1s", "2m" in YAML. A value that
// does not parse is kept and reported by Validate under its key, so the
// operator sees every problem at once with its name.
type Duration struct {
	d   time.Duration
	bad string
}

// Dur makes a Duration.
func Dur(d time.Duration) Duration { return Duration{d: d} }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		*d = Duration{bad: string(b)}
		return nil
	}
	*d = Duration{d: v}
	return nil
}

// MarshalText writes the duration in Go form.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.d.String()), nil }

// D is the duration as a time.Duration.
func (d Duration) D() time.Duration { return d.d }

// Policy is one sliding window: at most Limit requests per Window.
type Policy struct {
	Limit  int      `yaml:"limit"`
	Window Duration `yaml:"window"`
}

func policyOf(p ratelimit.Policy) Policy { return Policy{Limit: p.Limit, Window: Dur(p.Window)} }

// Config is the whole posedge.yaml (contract §2).
type Config struct {
	StoreID  string `yaml:"store_id"`
	NodeID   int    `yaml:"node_id"`
	Timezone string `yaml:"timezone"`
	Listen   string `yaml:"listen"`
	TLS      struct {
		CertFile string `yaml:"cert_file"`
		KeyFile  string `yaml:"key_file"`
	} `yaml:"tls"`
	// MaxSaleCents bounds every price, line (qty × price_cents) and total
	// of one sale or refund (contract §2); 1..cents.MaxSaleCentsCeiling.
	MaxSaleCents int64 `yaml:"max_sale_cents"`

	Admin struct {
		Listen    string `yaml:"listen"`
		TokenFile string `yaml:"token_file"`
		// TLS is optional on the admin listener too (1.2 or later).
		TLS struct {
			CertFile string `yaml:"cert_file"`
			KeyFile  string `yaml:"key_file"`
		} `yaml:"tls"`
	} `yaml:"admin"`
	Redis struct {
		Sentinels        []string `yaml:"sentinels"`
		MasterName       string   `yaml:"master_name"`
		Addr             string   `yaml:"addr"`
		Password         string   `yaml:"password" secret:"true"`
		SentinelPassword string   `yaml:"sentinel_password" secret:"true"`
		Replicas         int      `yaml:"replicas"`
		MinReplicasAck   *int     `yaml:"min_replicas_ack"`
		Timeout          Duration `yaml:"timeout"`      // deadline of one Redis call on the request path
		WaitTimeout      Duration `yaml:"wait_timeout"` // WAIT for replicas after money writes
	} `yaml:"redis"`
	Journal struct {
		Path          string   `yaml:"path"`
		WarnFreeBytes int64    `yaml:"warn_free_bytes"`
		CritFreeBytes int64    `yaml:"crit_free_bytes"`
		QuotaBytes    int64    `yaml:"quota_bytes"`
		Retention     Duration `yaml:"retention"`
		// MaxBytes caps the journal's database file (SQLite max_page_count,
		// 4 KiB pages; the WAL comes on top). At the cap, sales are refused
		// with 503 journal_unavailable rather than acknowledged. 0 = none.
		MaxBytes int64 `yaml:"max_bytes"`
	} `yaml:"journal"`
	HQ struct {
		NATSURL        string   `yaml:"nats_url" secret:"url"`
		CredsFile      string   `yaml:"creds_file"`
		CAFile         string   `yaml:"ca_file"`
		CertFile       string   `yaml:"cert_file"`
		KeyFile        string   `yaml:"key_file"`
		SubjectPrefix  string   `yaml:"subject_prefix"`
		BatchSize      int      `yaml:"batch_size"`
		BatchBytes     int      `yaml:"batch_bytes"`
		BacklogCritAge Duration `yaml:"backlog_crit_age"`
		AckTimeout     Duration `yaml:"ack_timeout"`
		// ConfirmAfter: rows JetStream acknowledged this long ago are
		// asked about (posedge-hq's have query) and published again when
		// HQ lacks them; status warns when one stays unconfirmed for
		// UnconfirmedWarnFactor × ConfirmAfter while HQ answers.
		ConfirmAfter Duration `yaml:"confirm_after"`
		// CatalogBucket is HQ's item master bucket (posedge-hq's
		// catalog_bucket); CatalogStaleAfter is how long its watch may be
		// down before status warns.
		CatalogBucket     string   `yaml:"catalog_bucket"`
		CatalogStaleAfter Duration `yaml:"catalog_stale_after"`
	} `yaml:"hq"`
	Limits struct {
		Store            Policy            `yaml:"store"`
		Terminal         Policy            `yaml:"terminal"`
		Actions          map[string]Policy `yaml:"actions"`
		FallbackFraction float64           `yaml:"fallback_fraction"`
		// TerminalBytes bounds the bytes of sale, refund and batch bodies
		// one terminal may send per window (issue 22 finding 6): what one
		// till can make Redis and the journal hold.
		TerminalBytes Policy `yaml:"terminal_bytes"`
	} `yaml:"limits"`
	Terminals []Terminal `yaml:"terminals"`
	Log       struct {
		Level  string `yaml:"level"`
		Format string `yaml:"format"`
	} `yaml:"log"`

	// Path is the file the config was read from (not a YAML key).
	Path string `yaml:"-"`
}

// Terminal is one till allowed to call the terminal API.
type Terminal struct {
	ID        string `yaml:"id"`
	KeySHA256 string `yaml:"key_sha256" secret:"true"`
}

// Defaults returns a config with every default of the contract.
func Defaults() Config {
	var c Config
	c.Timezone = "UTC"
	c.Listen = "0.0.0.0:8080"
	c.MaxSaleCents = cents.DefaultMaxSaleCents
	c.Admin.Listen = "127.0.0.1:8081"
	c.Redis.MasterName = "posedge"
	c.Redis.Replicas = 2
	c.Redis.Timeout = Dur(300 * time.Millisecond) // the one default of a Redis call's deadline: ledger and limiter get it from here
	c.Redis.WaitTimeout = Dur(100 * time.Millisecond)
	c.Journal.Path = "/var/lib/posedge/journal.db"
	c.Journal.WarnFreeBytes = 1 << 30
	c.Journal.CritFreeBytes = 256 << 20
	c.Journal.Retention = Dur(90 * 24 * time.Hour)
	c.HQ.SubjectPrefix = "pos.txn"
	c.HQ.BatchSize = 500
	c.HQ.BatchBytes = 4 << 20
	c.HQ.BacklogCritAge = Dur(time.Hour)
	c.HQ.AckTimeout = Dur(10 * time.Second)
	c.HQ.ConfirmAfter = Dur(30 * time.Second)
	c.HQ.CatalogBucket = "POS_CATALOG"
	c.HQ.CatalogStaleAfter = Dur(time.Hour)
	// The limits' defaults are the limiter's (contract §2).
	store, terminal, actions := ratelimit.DefaultPolicies()
	c.Limits.Store, c.Limits.Terminal = policyOf(store), policyOf(terminal)
	c.Limits.TerminalBytes = Policy{Limit: DefaultTerminalBytes, Window: Dur(time.Hour)}
	c.Limits.Actions = make(map[string]Policy, len(actions))
	for name, p := range actions {
		c.Limits.Actions[name] = policyOf(p)
	}
	c.Limits.FallbackFraction = ratelimit.DefaultFallbackFraction
	c.Log.Level = "info"
	c.Log.Format = "text"
	return c
}

// Load reads, parses and validates the file at path. The error names the
// file and, for each problem, the key.
func Load(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Config{}, fmt.Errorf("%s: %w", path, ErrNoConfig)
	}
	if err != nil {
		return Config{}, fmt.Errorf("read config %s: %w", path, err)
	}
	c, err := parse(b)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	c.Path = path
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse decodes YAML over the defaults and validates the result.
func Parse(b []byte) (Config, error) {
	c, err := parse(b)
	if err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

func parse(b []byte) (Config, error) {
	c := Defaults()
	// Actions given in the file replace the default entry by entry; an
	// action left out keeps its default.
	def := c.Limits.Actions
	c.Limits.Actions = nil
	// The file name is added by Load; a panic inside the YAML library
	// (v1.19.2 on "terminals:\n !") is a named error with its line.
	err := parseguard.Bytes("", b, func(src []byte) error {
		c = Defaults()
		c.Limits.Actions = nil
		return yaml.NewDecoder(bytes.NewReader(src), yaml.DisallowUnknownField()).Decode(&c)
	})
	var pe *parseguard.PanicError
	if errors.As(err, &pe) {
		return Config{}, fmt.Errorf("parse: %w", err)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return Config{}, configcheck.Syntax(err, b)
	}
	merged := map[string]Policy{}
	for k, v := range def {
		merged[k] = v
	}
	for k, v := range c.Limits.Actions {
		merged[k] = v
	}
	c.Limits.Actions = merged
	if c.Redis.MinReplicasAck == nil {
		n := 1
		if c.Redis.Addr != "" {
			n = 0
		}
		c.Redis.MinReplicasAck = &n
	}
	return c, nil
}

// FieldError is one problem with one key; ValidationError lists every
// problem found. Both daemons' configs answer in this one style
// (internal/configcheck).
type (
	FieldError      = configcheck.Problem
	ValidationError = configcheck.Problems
)

// The per-terminal byte quota (limits.terminal_bytes): by default 4 MiB
// an hour, four days' worth of a busy till's sales uploaded at once; at
// least one full batch body (1 MiB).
const (
	DefaultTerminalBytes = 4 << 20
	MinTerminalBytes     = 1 << 20
)

var (
	idPattern    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)
	sha256Hex    = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
	subjectToken = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)
	bucketName   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// Validate checks every key and reports all problems at once.
func (c *Config) Validate() error {
	var errs ValidationError
	add := errs.Addf
	durations := map[string]Duration{
		"redis.timeout": c.Redis.Timeout, "redis.wait_timeout": c.Redis.WaitTimeout,
		"journal.retention": c.Journal.Retention, "hq.backlog_crit_age": c.HQ.BacklogCritAge,
		"hq.ack_timeout": c.HQ.AckTimeout, "hq.confirm_after": c.HQ.ConfirmAfter, "hq.catalog_stale_after": c.HQ.CatalogStaleAfter, "limits.store.window": c.Limits.Store.Window,
		"limits.terminal.window": c.Limits.Terminal.Window, "limits.terminal_bytes.window": c.Limits.TerminalBytes.Window,
	}
	for k, p := range c.Limits.Actions {
		durations["limits.actions."+k+".window"] = p.Window
	}
	badKeys := make([]string, 0)
	for k, d := range durations {
		if d.bad != "" {
			badKeys = append(badKeys, k)
		}
	}
	sort.Strings(badKeys)
	for _, k := range badKeys {
		add(k, "not a duration like \"1s\" or \"2m\": %q", durations[k].bad)
	}

	if !idPattern.MatchString(c.StoreID) {
		add("store_id", "must be 1-32 of [A-Za-z0-9_-], got %q", c.StoreID)
	}
	if c.NodeID < 0 || c.NodeID > 9 {
		add("node_id", "must be 0-9, got %d", c.NodeID)
	}
	if _, err := time.LoadLocation(c.Timezone); err != nil || c.Timezone == "" {
		add("timezone", "unknown IANA time zone %q", c.Timezone)
	}
	checkAddr := func(key, v string) {
		if _, _, err := net.SplitHostPort(v); err != nil {
			add(key, "must be host:port, got %q", v)
		}
	}
	checkAddr("listen", c.Listen)
	checkAddr("admin.listen", c.Admin.Listen)
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		add("tls", "cert_file and key_file go together: give both or neither")
	}
	if c.MaxSaleCents < 1 || c.MaxSaleCents > cents.MaxSaleCentsCeiling {
		add("max_sale_cents", "must be 1-%d (so that sums of lines never overflow), got %d", cents.MaxSaleCentsCeiling, c.MaxSaleCents)
	}
	if (c.Admin.TLS.CertFile == "") != (c.Admin.TLS.KeyFile == "") {
		add("admin.tls", "cert_file and key_file go together: give both or neither")
	}
	if c.Admin.TokenFile == "" && !IsLoopback(c.Admin.Listen) {
		add("admin.token_file", "required because admin.listen %q is not a loopback address", c.Admin.Listen)
	} else if c.Admin.TokenFile != "" {
		if _, err := c.AdminToken(); err != nil {
			add("admin.token_file", "%v", err)
		}
	}
	if c.Redis.Addr == "" && len(c.Redis.Sentinels) == 0 {
		add("redis.sentinels", "give the sentinels (or redis.addr for a single development node)")
	}
	if c.Redis.Addr != "" && len(c.Redis.Sentinels) > 0 {
		add("redis.addr", "give either redis.addr or redis.sentinels, not both")
	}
	for i, s := range c.Redis.Sentinels {
		checkAddr(fmt.Sprintf("redis.sentinels[%d]", i), s)
	}
	if c.Redis.Addr != "" {
		checkAddr("redis.addr", c.Redis.Addr)
	}
	if len(c.Redis.Sentinels) > 0 && c.Redis.MasterName == "" {
		add("redis.master_name", "required with sentinels")
	}
	if c.Redis.Replicas < 0 {
		add("redis.replicas", "must be >= 0, got %d", c.Redis.Replicas)
	}
	if c.Redis.MinReplicasAck != nil && (*c.Redis.MinReplicasAck < 0 || *c.Redis.MinReplicasAck > c.Redis.Replicas) {
		add("redis.min_replicas_ack", "must be 0..redis.replicas (%d), got %d", c.Redis.Replicas, *c.Redis.MinReplicasAck)
	}
	if c.Redis.Timeout.D() <= 0 || c.Redis.Timeout.D() > 5*time.Second {
		add("redis.timeout", "must be in (0, 5s], got %v", c.Redis.Timeout.D())
	}
	if c.Redis.WaitTimeout.D() < 0 || c.Redis.WaitTimeout.D() > 5*time.Second {
		add("redis.wait_timeout", "must be in [0, 5s], got %v", c.Redis.WaitTimeout.D())
	}
	if c.Journal.Path == "" {
		add("journal.path", "required")
	}
	if c.Journal.WarnFreeBytes < 0 || c.Journal.CritFreeBytes < 0 {
		add("journal.warn_free_bytes", "free-space thresholds must be >= 0")
	} else if c.Journal.CritFreeBytes > c.Journal.WarnFreeBytes {
		add("journal.crit_free_bytes", "must not exceed journal.warn_free_bytes")
	}
	if c.Journal.QuotaBytes < 0 {
		add("journal.quota_bytes", "must be >= 0 (0 = no quota)")
	}
	if c.Journal.MaxBytes != 0 && c.Journal.MaxBytes < 1<<20 {
		add("journal.max_bytes", "must be 0 (no cap) or at least 1048576 (1 MiB), got %d", c.Journal.MaxBytes)
	} else if c.Journal.MaxBytes > 0 && c.Journal.QuotaBytes >= c.Journal.MaxBytes {
		add("journal.quota_bytes", "must be below journal.max_bytes (%d) so status warns before sales are refused", c.Journal.MaxBytes)
	}
	if c.Journal.Retention.D() < 24*time.Hour {
		add("journal.retention", "must be at least 24h (idempotency keys are kept 24 h), got %v", c.Journal.Retention.D())
	}
	if err := natsurl.Check(c.HQ.NATSURL); err != nil {
		add("hq.nats_url", "%v", err)
	}
	if !subjectToken.MatchString(c.HQ.SubjectPrefix) {
		add("hq.subject_prefix", "must be dot-separated tokens of [A-Za-z0-9_-], got %q", c.HQ.SubjectPrefix)
	}
	if c.HQ.BatchSize < 1 || c.HQ.BatchSize > 10000 {
		add("hq.batch_size", "must be 1-10000, got %d", c.HQ.BatchSize)
	}
	if c.HQ.BatchBytes < 64<<10 {
		add("hq.batch_bytes", "must be at least 65536, got %d", c.HQ.BatchBytes)
	}
	if c.HQ.BacklogCritAge.D() <= 0 {
		add("hq.backlog_crit_age", "must be > 0")
	}
	if !bucketName.MatchString(c.HQ.CatalogBucket) {
		add("hq.catalog_bucket", "must be 1-64 of [A-Za-z0-9_-], got %q", c.HQ.CatalogBucket)
	}
	if c.HQ.CatalogStaleAfter.D() <= 0 {
		add("hq.catalog_stale_after", "must be > 0")
	}
	if c.HQ.AckTimeout.D() <= 0 {
		add("hq.ack_timeout", "must be > 0")
	}
	// At least a second (a question per row, not per publish) and at
	// most 2 minutes: the contract stores every sale at HQ within 3
	// minutes of posedge-hq running, and a lost row is only found out
	// confirm_after after its ack.
	if d := c.HQ.ConfirmAfter.D(); d < time.Second || d > 2*time.Minute {
		add("hq.confirm_after", "must be 1s-2m, got %s", d)
	}
	checkPolicy := func(key string, p Policy) {
		if p.Limit < 1 || p.Limit > ratelimit.MaxLimit {
			add(key+".limit", "must be 1-%d, got %d", ratelimit.MaxLimit, p.Limit)
		}
		if p.Window.D() < time.Millisecond || p.Window.D() > ratelimit.MaxWindow || p.Window.D()%time.Millisecond != 0 {
			add(key+".window", "must be whole milliseconds from %v to %v, got %v", time.Millisecond, ratelimit.MaxWindow, p.Window.D())
		}
	}
	checkPolicy("limits.store", c.Limits.Store)
	checkPolicy("limits.terminal", c.Limits.Terminal)
	if tb := c.Limits.TerminalBytes; tb.Limit < MinTerminalBytes || tb.Limit > 1<<30 {
		add("limits.terminal_bytes.limit", "must be %d (one full batch) to %d bytes, got %d", MinTerminalBytes, 1<<30, tb.Limit)
	} else if tb.Window.D() < time.Second || tb.Window.D() > 24*time.Hour {
		add("limits.terminal_bytes.window", "must be 1s to 24h, got %v", tb.Window.D())
	}
	names := make([]string, 0, len(c.Limits.Actions))
	for k := range c.Limits.Actions {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !slices.Contains(ratelimit.Actions(), k) {
			add("limits.actions."+k, "unknown action (known: %s)", strings.Join(ratelimit.Actions(), ", "))
			continue
		}
		checkPolicy("limits.actions."+k, c.Limits.Actions[k])
	}
	if !(c.Limits.FallbackFraction > 0 && c.Limits.FallbackFraction <= 1) { // NaN too
		add("limits.fallback_fraction", "must be in (0, 1], got %v", c.Limits.FallbackFraction)
	}
	if len(c.Terminals) == 0 {
		add("terminals", "at least one terminal is required")
	}
	seenID, seenKey := map[string]bool{}, map[string]bool{}
	for i, t := range c.Terminals {
		key := fmt.Sprintf("terminals[%d]", i)
		if !idPattern.MatchString(t.ID) {
			add(key+".id", "must be 1-32 of [A-Za-z0-9_-], got %q", t.ID)
		} else if seenID[t.ID] {
			add(key+".id", "duplicate terminal id %q", t.ID)
		}
		seenID[t.ID] = true
		if !sha256Hex.MatchString(t.KeySHA256) {
			add(key+".key_sha256", "must be 64 hex digits (sha256 of the terminal's key)")
		} else if seenKey[strings.ToLower(t.KeySHA256)] {
			add(key+".key_sha256", "two terminals share one key")
		}
		seenKey[strings.ToLower(t.KeySHA256)] = true
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		add("log.level", "must be debug, info, warn or error, got %q", c.Log.Level)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		add("log.format", "must be text or json, got %q", c.Log.Format)
	}
	// No value may carry a control character: a newline in journal.path
	// became a line of its own (an extra root ExecStartPre) in the unit
	// posedge install writes (issue 22 finding 9). The value is never
	// quoted: it may be a secret.
	walkStrings(reflect.ValueOf(c).Elem(), "", func(key, v string) {
		if i := strings.IndexFunc(v, unicode.IsControl); i >= 0 {
			add(key, "must not contain control characters (found one at byte %d)", i)
		}
	})
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// Location is the store's time zone (valid after Validate).
func (c *Config) Location() *time.Location {
	loc, err := time.LoadLocation(c.Timezone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// TerminalKeys maps the lower-case hex sha256 of each key to its terminal id.
func (c *Config) TerminalKeys() map[string]string {
	m := make(map[string]string, len(c.Terminals))
	for _, t := range c.Terminals {
		m[strings.ToLower(t.KeySHA256)] = t.ID
	}
	return m
}

// AdminToken reads admin.token_file (trimmed, at least
// secret.MinTokenLen characters); "" when none is set. On Windows a
// relative path is taken from the config file's folder, as the service
// does (see cmd/posedge platformPaths).
func (c *Config) AdminToken() (string, error) {
	p := c.Admin.TokenFile
	if p == "" {
		return "", nil
	}
	if runtime.GOOS == "windows" && !filepath.IsAbs(p) && c.Path != "" {
		p = filepath.Join(filepath.Dir(c.Path), p)
	}
	return secret.ReadToken(p)
}

// IsLoopback reports whether a host:port listens on loopback only.
func IsLoopback(hostport string) bool { return httpguard.IsLoopback(hostport) }

// walkStrings calls f with the YAML key path and value of every string
// in v (structs, slices, maps of them).
func walkStrings(v reflect.Value, key string, f func(key, v string)) {
	switch v.Kind() {
	case reflect.String:
		f(key, v.String())
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkStrings(v.Elem(), key, f)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			name := strings.Split(sf.Tag.Get("yaml"), ",")[0]
			if name == "" || name == "-" {
				name = strings.ToLower(sf.Name)
			}
			k := name
			if key != "" {
				k = key + "." + name
			}
			walkStrings(v.Field(i), k, f)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkStrings(v.Index(i), fmt.Sprintf("%s[%d]", key, i), f)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			mk := fmt.Sprint(iter.Key().Interface())
			if strings.IndexFunc(mk, unicode.IsControl) >= 0 {
				f(key, mk)
				continue
			}
			walkStrings(iter.Value(), key+"."+mk, f)
		}
	}
}

// PlaintextWarnings names the links this config leaves in plaintext off
// loopback (issue 22 finding 9): the terminal listener without tls (the
// tills' keys and every sale cross the LAN readable), and a nats:// HQ URL
// to a host that is not loopback without hq.ca_file or hq.cert_file (the
// store's NATS password and its sales cross the WAN readable). They are
// warnings, not errors: a store may terminate TLS in front of posedge.
// Valid after Validate; user info is never shown.
func (c *Config) PlaintextWarnings() []string {
	var out []string
	if c.TLS.CertFile == "" && !loopbackAddr(c.Listen) {
		out = append(out, fmt.Sprintf("listen %s is off loopback without tls: terminal keys and sales cross the LAN in plaintext (set tls.cert_file and tls.key_file)", c.Listen))
	}
	if c.HQ.CAFile == "" && c.HQ.CertFile == "" {
		for _, u := range natsurl.Split(c.HQ.NATSURL) {
			pu, err := url.Parse(u)
			if err != nil || pu.Scheme != "nats" || loopbackHost(pu.Hostname()) {
				continue
			}
			out = append(out, fmt.Sprintf("hq.nats_url %s is plaintext nats:// to a host off loopback: the store's NATS credentials and sales cross the network readable (use tls:// or set hq.ca_file)", natsurl.Redact(u)))
		}
	}
	return out
}

func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && loopbackHost(host)
}

func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
