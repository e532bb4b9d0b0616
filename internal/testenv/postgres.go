package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Postgres is a throwaway PostgreSQL cluster: Debian's binaries,
// initdb + pg_ctl on a free loopback port, data and socket in a temp dir,
// trust authentication for the superuser "postgres". It is stopped and
// removed with the test.
type Postgres struct {
	Port int
	Dir  string
	bin  string
	data string   // PGDATA
	opts string   // server options
	as   []string // command prefix running a binary as the postgres user
	dbs  atomic.Int64
}

// pgBinDirs is where Debian installs each major version's binaries.
const pgBinDirs = "/usr/lib/postgresql/*/bin"

// StartPostgres starts a cluster. It fails (never skips) the test when
// PostgreSQL is not installed: `apt-get install postgresql` brings it.
// PostgreSQL refuses to run as root, so as root its binaries run as the
// postgres user, which gets the temp dir.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	return startPostgres(t, false)
}

// StartPostgresDurable starts a cluster as production runs one: fsync
// and full_page_writes on (the defaults), so a commit HQ acknowledges
// is on disk. The HQ fault tests use it; the others run with fsync off
// to stay fast.
func StartPostgresDurable(t testing.TB) *Postgres {
	t.Helper()
	return startPostgres(t, true)
}

func startPostgres(t testing.TB, durable bool) *Postgres {
	t.Helper()
	bin, err := postgresBin()
	if err != nil {
		t.Fatalf("PostgreSQL: %v", err)
	}
	dir, err := os.MkdirTemp("", "posedge-pg-")
	if err != nil {
		t.Fatalf("postgres temp dir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &Postgres{Port: FreePort(t), Dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		if err := p.runAsPostgres(); err != nil {
			t.Fatalf("PostgreSQL as root: %v", err)
		}
	}
	data := filepath.Join(dir, "data")
	p.data = data
	if out, err := p.cmd("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
		"--no-locale", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	// A test cluster: durability is not what is tested here, unless
	// durable.
	sync := []string{"-c", "fsync=off", "-c", "full_page_writes=off"}
	if durable {
		sync = []string{"-c", "fsync=on", "-c", "full_page_writes=on", "-c", "synchronous_commit=on"}
	}
	opts := strings.Join(append(append([]string{
		"-p", strconv.Itoa(p.Port), "-k", dir, "-c", "listen_addresses=127.0.0.1"}, sync...),
		"-c", "max_connections=200", "-c", "shared_buffers=64MB"), " ")
	p.opts = opts
	p.Start(t)
	t.Cleanup(func() {
		if out, err := p.cmd("pg_ctl", "-D", data, "-m", "immediate", "-w", "-t", "60", "stop").CombinedOutput(); err != nil {
			t.Logf("pg_ctl stop: %v\n%s", err, out)
		}
	})
	return p
}

// Start starts the server (again, after Stop) on its port and data.
func (p *Postgres) Start(t testing.TB) {
	t.Helper()
	if out, err := p.cmd("pg_ctl", "-D", p.data, "-l", filepath.Join(p.Dir, "postgres.log"), "-w", "-t", "120",
		"-o", p.opts, "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(p.Dir, "postgres.log"))
		t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
}

// Stop stops the server at once ("immediate": no checkpoint, clients cut
// off, crash recovery on the next Start), as a crash or a failover does.
func (p *Postgres) Stop(t testing.TB) {
	t.Helper()
	if out, err := p.cmd("pg_ctl", "-D", p.data, "-m", "immediate", "-w", "-t", "60", "stop").CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl stop: %v\n%s", err, out)
	}
}

// postgresBin finds the newest installed version's binaries.
func postgresBin() (string, error) {
	dirs, _ := filepath.Glob(pgBinDirs)
	dirs = slices.DeleteFunc(dirs, func(d string) bool {
		_, err := os.Stat(filepath.Join(d, "initdb"))
		return err != nil
	})
	if len(dirs) == 0 {
		if p, err := exec.LookPath("pg_ctl"); err == nil {
			return filepath.Dir(p), nil
		}
		return "", fmt.Errorf("no initdb in %s nor pg_ctl in PATH: install it (apt-get install -y postgresql)", pgBinDirs)
	}
	version := func(d string) int {
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		return n
	}
	slices.SortFunc(dirs, func(a, b string) int { return version(a) - version(b) })
	return dirs[len(dirs)-1], nil
}

// runAsPostgres hands the temp dir to the postgres user, makes sure that
// user can reach it, and runs the server binaries as that user.
func (p *Postgres) runAsPostgres() error {
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("no postgres user to run as (the postgresql package creates it): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(p.Dir, uid, gid); err != nil {
		return err
	}
	// Every parent must be traversable (o+x) by the postgres user.
	for d := filepath.Dir(p.Dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, fi.Mode().Perm()|0o001); err != nil {
				return fmt.Errorf("make %s traversable: %w", d, err)
			}
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	if r, err := exec.LookPath("runuser"); err == nil {
		p.as = []string{r, "-u", "postgres", "--"}
		return nil
	}
	if s, err := exec.LookPath("setpriv"); err == nil {
		p.as = []string{s, "--reuid", u.Uid, "--regid", u.Gid, "--init-groups", "--"}
		return nil
	}
	return fmt.Errorf("neither runuser nor setpriv found to run PostgreSQL as the postgres user")
}

func (p *Postgres) cmd(name string, args ...string) *exec.Cmd {
	argv := append(append(slices.Clone(p.as), filepath.Join(p.bin, name)), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = p.Dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	return cmd
}

// URL is the connection URL of the cluster's "postgres" database.
func (p *Postgres) URL() string { return p.dbURL("postgres") }

func (p *Postgres) dbURL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.Port, db)
}

// CopyDatabase creates a database in the cluster as a copy of the one of
// src (a URL NewDatabase returned; nothing may be connected to it) and
// returns its URL: a large fixture built once, a fresh copy per use.
func (p *Postgres) CopyDatabase(t testing.TB, src string) string {
	t.Helper()
	from := src[strings.LastIndexByte(src, '/')+1:]
	if i := strings.IndexByte(from, '?'); i >= 0 {
		from = from[:i]
	}
	name := fmt.Sprintf("test%d_%d", p.dbs.Add(1), time.Now().UnixNano()%1e6)
	if out, err := p.cmd("createdb", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", "postgres", "-T", from, name).CombinedOutput(); err != nil {
		t.Fatalf("createdb %s from %s: %v\n%s", name, from, err, out)
	}
	return p.dbURL(name)
}

// NewDatabase creates an empty database in the cluster and returns its
// URL, so that tests sharing one cluster do not see each other's tables.
func (p *Postgres) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("test%d_%d", p.dbs.Add(1), time.Now().UnixNano()%1e6)
	if out, err := p.cmd("createdb", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", "postgres", name).CombinedOutput(); err != nil {
		t.Fatalf("createdb %s: %v\n%s", name, err, out)
	}
	return p.dbURL(name)
}
