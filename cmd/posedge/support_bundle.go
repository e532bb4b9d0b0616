package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/posedge/posedge/edge/config"
	"github.com/posedge/posedge/edge/status"
	"github.com/posedge/posedge/offline/journal"
)

// supportBundleCommand is `posedge support-bundle`: one .tar.gz a
// technician can send, with everything support asks for first and no
// secret: the config with passwords, tokens and terminal key hashes
// redacted, the status (from the daemon, or the offline report), the
// journal's figures, the metrics, recent logs where they can be read, and
// the versions. Every part is best effort; MANIFEST.txt says what is in
// and what could not be had.
type supportBundleCommand struct{}

func (c *supportBundleCommand) Run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("posedge support-bundle", flag.ContinueOnError)
	cf := addConfigFlag(fs)
	out := fs.String("out", "", "archive to write (default posedge-support-<store>-<time>.tar.gz in the current folder)")
	since := fs.Duration("logs-since", 24*time.Hour, "how far back to collect logs")
	logFile := fs.String("log-file", "", "a log file to include (its last 4 MiB), when posedge logs to a file")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the daemon")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2}
	}
	p := cf.Path()
	now := time.Now().UTC().Truncate(time.Second)
	b := &bundle{}

	raw, rawErr := os.ReadFile(p)
	if rawErr != nil {
		b.note("config.yaml", "not included: "+rawErr.Error())
	} else {
		red, how := redactConfig(raw)
		b.add("config.yaml", []byte("# "+p+", "+how+"\n"+string(red)))
	}
	cfg, cfgErr := config.Load(p)
	if cfgErr != nil {
		b.add("config-check.txt", []byte(cfgErr.Error()+"\n"))
	} else {
		platformPaths(&cfg)
		b.add("config-check.txt", []byte(p+": OK\n"))
	}

	storeID := "unknown"
	if cfgErr == nil {
		storeID = cfg.StoreID
		r, err := fetch(ctx, &cfg, *timeout)
		if err != nil {
			r = offlineReport(ctx, &cfg, err)
			b.note("status.json", "the daemon did not answer ("+err.Error()+"): offline report from the journal")
		}
		var txt bytes.Buffer
		_ = status.Render(&txt, r)
		b.add("status.txt", txt.Bytes())
		b.addJSON("status.json", r)
		b.journal(ctx, cfg.Journal.Path)
		if m, err := adminGet(ctx, &cfg, "/metrics", *timeout); err != nil {
			b.note("metrics.txt", "not included: "+err.Error())
		} else {
			b.add("metrics.txt", m)
		}
	} else {
		b.note("status.json", "not included: the config cannot be read, so neither the daemon nor the journal can be found")
	}
	b.logs(ctx, *since, *logFile)
	b.add("versions.txt", versions())

	name := *out
	if name == "" {
		name = fmt.Sprintf("posedge-support-%s-%s.tar.gz", storeID, now.Format("20060102T150405Z"))
	}
	dir := strings.TrimSuffix(strings.TrimSuffix(baseName(name), ".gz"), ".tar")
	if err := b.write(name, dir, now); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "support bundle written to %s (%d files; see MANIFEST.txt inside)\n", name, len(b.files)+1)
	return nil
}

type bundleFile struct {
	name string
	data []byte
}

type bundle struct {
	files []bundleFile
	notes []string
}

func (b *bundle) add(name string, data []byte) { b.files = append(b.files, bundleFile{name, data}) }

func (b *bundle) addJSON(name string, v any) {
	j, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		b.note(name, "not included: "+err.Error())
		return
	}
	b.add(name, append(j, '\n'))
}

func (b *bundle) note(name, what string) { b.notes = append(b.notes, name+": "+what) }

// journal adds the journal's figures, read-only beside the daemon.
func (b *bundle) journal(ctx context.Context, path string) {
	j, err := journal.Open(ctx, path, journal.Options{ReadOnly: true})
	if err != nil {
		b.note("journal-stats.json", "not included: "+err.Error())
		return
	}
	defer j.Close()
	st, err := j.Stats(ctx)
	if err != nil {
		b.note("journal-stats.json", "not included: "+err.Error())
		return
	}
	b.addJSON("journal-stats.json", st)
	if q, err := j.Quarantined(ctx); err == nil && len(q) > 0 {
		b.addJSON("journal-quarantine.json", q)
	}
}

// logs adds what the system keeps of posedge's log: journalctl on systemd
// hosts, the Event Log on Windows, and a log file if one is named.
func (b *bundle) logs(ctx context.Context, since time.Duration, logFile string) {
	switch runtime.GOOS {
	case "windows":
		if out, err := eventLogTail(ctx); err != nil {
			b.note("logs/eventlog.txt", "not included: "+err.Error())
		} else {
			b.add("logs/eventlog.txt", out)
		}
	default:
		if _, err := exec.LookPath("journalctl"); err != nil {
			b.note("logs/journalctl.txt", "not included: no journalctl on this host (posedge logs to stderr; name a file with --log-file)")
			break
		}
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		out, err := exec.CommandContext(cctx, "journalctl", "--unit", serviceName+".service", "--no-pager",
			"--output", "short-iso", "--since", time.Now().Add(-since).Format("2006-01-02 15:04:05")).CombinedOutput()
		cancel()
		if err != nil {
			b.note("logs/journalctl.txt", fmt.Sprintf("journalctl failed (%v); its output is included", err))
		}
		b.add("logs/journalctl.txt", tail(out, 16<<20))
	}
	if logFile != "" {
		data, err := readTail(logFile, 4<<20)
		if err != nil {
			b.note("logs/posedge.log", "not included: "+err.Error())
		} else {
			b.add("logs/posedge.log", data)
		}
	}
}

func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		if _, err := f.Seek(fi.Size()-max, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(f)
}

func tail(b []byte, max int) []byte {
	if len(b) > max {
		return b[len(b)-max:]
	}
	return b
}

// write makes the .tar.gz: every file under dir/, MANIFEST.txt first.
func (b *bundle) write(name, dir string, now time.Time) error {
	var man strings.Builder
	fmt.Fprintf(&man, "posedge support bundle, %s\n\nfiles:\n", now.Format(time.RFC3339))
	for _, f := range b.files {
		fmt.Fprintf(&man, "  %-28s %d bytes\n", f.name, len(f.data))
	}
	if len(b.notes) > 0 {
		man.WriteString("\nnotes:\n")
		for _, n := range b.notes {
			man.WriteString("  " + n + "\n")
		}
	}
	man.WriteString("\n" + redactionNote)
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("support bundle: %w", err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	all := append([]bundleFile{{"MANIFEST.txt", []byte(man.String())}}, b.files...)
	for _, bf := range all {
		h := &tar.Header{Name: dir + "/" + bf.name, Mode: 0o600, Size: int64(len(bf.data)), ModTime: now, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(h); err != nil {
			f.Close()
			return err
		}
		if _, err := tw.Write(bf.data); err != nil {
			f.Close()
			return err
		}
	}
	for _, c := range []io.Closer{tw, zw, f} {
		if err := c.Close(); err != nil {
			return fmt.Errorf("support bundle %s: %w", name, err)
		}
	}
	return nil
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// adminGet fetches one path of the admin API.
func adminGet(ctx context.Context, cfg *config.Config, path string, timeout time.Duration) ([]byte, error) {
	c, err := newAdminClient(cfg, timeout)
	if err != nil {
		return nil, err
	}
	return c.do(ctx, http.MethodGet, path)
}

// versions are posedge's, Go's and the OS's.
func versions() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "posedge %s\n%s %s/%s\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if h, err := os.Hostname(); err == nil {
		fmt.Fprintf(&b, "hostname %s\n", h)
	}
	switch runtime.GOOS {
	case "windows":
		if out, err := exec.Command("cmd", "/c", "ver").Output(); err == nil {
			b.WriteString(strings.TrimSpace(string(out)) + "\n")
		}
	default:
		if out, err := exec.Command("uname", "-srvm").Output(); err == nil {
			b.WriteString("uname " + strings.TrimSpace(string(out)) + "\n")
		}
		if out, err := os.ReadFile("/etc/os-release"); err == nil {
			b.WriteString("\n/etc/os-release:\n" + string(out))
		}
	}
	for _, tool := range [][]string{{"redis-server", "--version"}, {"systemctl", "--version"}} {
		if _, err := exec.LookPath(tool[0]); err == nil {
			if out, err := exec.Command(tool[0], tool[1:]...).Output(); err == nil {
				first, _, _ := strings.Cut(string(out), "\n")
				b.WriteString(first + "\n")
			}
		}
	}
	return []byte(b.String())
}
