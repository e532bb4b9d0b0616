package natsurl

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/posedge/posedge/internal/secret"
)

// Example is a valid setting shown in error messages.
const Example = `"nats://hq1.example:4222" or, for a cluster, "nats://hq1.example:4222,nats://hq2.example:4222,nats://hq3.example:4222"`

// Split returns the servers of a setting, trimmed, empty ones dropped.
func Split(s string) []string {
	var out []string
	for _, u := range strings.Split(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// Check reports what is wrong with a setting, or nil; in a list, each
// error names its server. Its errors never contain the credentials a URL
// may embed.
func Check(s string) error {
	servers := Split(s)
	if len(servers) == 0 {
		return fmt.Errorf("required, e.g. %s", Example)
	}
	if len(servers) == 1 {
		return check1(servers[0])
	}
	var errs []error
	for i, u := range servers {
		if err := check1(u); err != nil {
			errs = append(errs, fmt.Errorf("server %d of %d (%s): %w", i+1, len(servers), Redact(u), err))
		}
	}
	return errors.Join(errs...)
}

func check1(s string) error {
	if !strings.Contains(s, "://") {
		// The NATS client reads host:port as nats://host:port.
		s = "nats://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Opaque != "" {
		// url.Parse's own error repeats the URL, password included.
		return errors.New(`not a URL such as "nats://hq.example:4222"`)
	}
	switch u.Scheme {
	case "nats", "tls", "ws", "wss":
	default:
		return fmt.Errorf("unsupported scheme %q: use nats://, tls://, ws:// or wss://", u.Scheme)
	}
	if u.Hostname() == "" {
		return errors.New("no host")
	}
	if p := u.Port(); p != "" {
		var n int
		if _, err := fmt.Sscanf(p, "%d", &n); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("bad port %q", p)
		}
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return errors.New("takes no path, query or fragment")
	}
	return nil
}

// Redact hides the credentials of every URL in a setting (one URL or a
// comma-separated list), whatever characters the password holds: see
// secret.RedactURLs.
// A setting without any "scheme://" (nats.go accepts "user:pw@host:4222")
// is masked item by item up to each item's last "@".
func Redact(s string) string {
	if strings.Contains(s, "://") {
		return secret.RedactURLs(s)
	}
	parts := strings.Split(s, ",")
	for i, p := range parts {
		if at := strings.LastIndexByte(p, '@'); at >= 0 {
			lead := p[:len(p)-len(strings.TrimLeft(p, " \t"))]
			parts[i] = lead + "xxxxx" + p[at:]
		}
	}
	return strings.Join(parts, ",")
}
