// Package buildinfo says which build is running: the version the Makefile
// stamps (git describe), the commit and Go version the toolchain records.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Set at link time by the Makefile (-ldflags "-X keno/server/buildinfo.version=…"):
// the toolchain's own VCS stamp is not always there (-buildvcs=false, a
// tree copied without .git).
var version, revision = "", ""

// Info identifies a build.
type Info struct {
	Version  string // git describe, or "dev" for an unstamped build
	Revision string // the commit, "+dirty" when the tree had changes; "unknown" outside git
	Go       string
}

// Read returns this binary's build information.
func Read() Info {
	in := Info{Version: version, Revision: revision, Go: runtime.Version()}
	if in.Revision == "" {
		in.Revision = "unknown"
	}
	if in.Version == "" {
		in.Version = "dev"
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		dirty := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Revision = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if dirty && in.Revision != "unknown" {
			in.Revision += "+dirty"
		}
	}
	return in
}

func (in Info) String() string {
	return "keno-server " + in.Version + " (commit " + in.Revision + ", " + in.Go + ")"
}
