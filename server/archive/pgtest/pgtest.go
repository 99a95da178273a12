// Package pgtest starts a real PostgreSQL server for tests (and for the load
// tester): initdb into a temporary directory, pg_ctl start on a loopback
// port, nothing shared with the machine's own clusters. A missing
// PostgreSQL is a failure, not a skip: `make test` installs it (.ci/deps).
package pgtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// Server is one PostgreSQL server.
type Server struct {
	Dir  string // data directory
	Port int
	bin  string
	uid  *syscall.Credential // run as this user (PostgreSQL refuses root)
	logf string
}

// Start runs a fresh server for the test and stops it at cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Close stops the server and removes its files.
func (s *Server) Close() {
	s.Stop()
	os.RemoveAll(filepath.Dir(s.Dir))
}

// New initialises and starts a server; the caller stops it.
func New() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "keno-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: filepath.Join(root, "data"), bin: bin, logf: filepath.Join(root, "log")}
	if os.Geteuid() == 0 {
		// PostgreSQL will not run as root: hand the directory to its own user.
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("pgtest: running as root and no postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.uid = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(root, uid, gid); err != nil {
			return nil, err
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.Port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	if out, err := s.run("initdb", "-D", s.Dir, "-U", "keno", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	return s, s.Start()
}

// Start (re)starts the server on its port.
func (s *Server) Start() error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200", s.Port, filepath.Dir(s.Dir))
	if out, err := s.run("pg_ctl", "-D", s.Dir, "-l", s.logf, "-o", opts, "-w", "start"); err != nil {
		log, _ := os.ReadFile(s.logf)
		return fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	return nil
}

// Stop stops the server (fast shutdown: sessions are cut).
func (s *Server) Stop() {
	s.run("pg_ctl", "-D", s.Dir, "-m", "fast", "-w", "stop")
}

// URL is the connection string of the server's default database.
func (s *Server) URL() string {
	return fmt.Sprintf("postgres://keno@127.0.0.1:%d/postgres?sslmode=disable", s.Port)
}

func (s *Server) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	if s.uid != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.uid}
	}
	cmd.Dir = "/"
	return cmd.CombinedOutput()
}

// binDir finds PostgreSQL's programs: on PATH, or where Debian puts them.
func binDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(r), nil
		}
		return filepath.Dir(p), nil
	}
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(m) > 0 {
		return filepath.Dir(m[len(m)-1]), nil
	}
	return "", fmt.Errorf("PostgreSQL not found (pg_ctl): run `make deps` (installs Debian's postgresql)")
}
