// Command keno-server serves Keno Mystères over HTTP and WebSocket, and
// carries the operator's tools as subcommands:
//
//	keno-server [serve] [flags]   run the game server (default)
//	keno-server par [-json]       exact RTP report of the embedded prize table
//	keno-server simulate [-n N]   play N games per pick count, compare with exact RTP
//	keno-server verify            walk the sealed journals (both tiers) and report tampering
//	keno-server archive           run only the archiver (Redis → PostgreSQL)
//	keno-server reconcile [-json] WALLET=seamless: the journal against the operator's acknowledgements
//	keno-server operator [flags]  a reference operator wallet (protocol/OPERATOR.md) with injectable faults
//	keno-server version           the build: version, commit, Go
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"keno/server/buildinfo"
)

func main() {
	args := os.Args[1:]
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "serve":
		err = serve(args)
	case "par":
		err = par(args)
	case "simulate":
		err = simulate(args)
	case "verify":
		err = verify(args)
	case "archive":
		err = archiveOnly(args)
	case "reconcile":
		err = reconcile(args)
	case "operator":
		err = referenceOperator(args)
	case "version":
		fmt.Println(buildinfo.Read())
	default:
		err = fmt.Errorf("unknown command %q (serve, par, simulate, verify, archive, reconcile, operator, version)", cmd)
	}
	if errors.Is(err, flag.ErrHelp) {
		return // -h: the usage is printed, and asking for it is no failure
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "keno-server:", err)
		os.Exit(1)
	}
}
