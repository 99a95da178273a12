// Package redisinfo reads the text Redis's INFO command answers, for the
// parts of the server that check or show Redis (its version, its memory)
// and for the programs and benchmarks that measure it (its commands). No
// client of its own: callers fetch the text.
package redisinfo

import (
	"strconv"
	"strings"
)

// Fields parses INFO text into its fields (name: value). Section headers
// ("# Server") and blank lines are not fields.
func Fields(info string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line) // Redis ends lines with \r\n
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// CommandStats parses the text of INFO commandstats into each command's
// calls and microseconds ([calls, usec]): what the load tester reports per
// game and the wallet's benchmark per call.
func CommandStats(info string) map[string][2]int64 {
	out := map[string][2]int64{}
	for name, rest := range Fields(info) {
		// cmdstat_evalsha:calls=12,usec=345,usec_per_call=28.75,…
		name, found := strings.CutPrefix(name, "cmdstat_")
		if !found {
			continue
		}
		var v [2]int64
		for _, kv := range strings.Split(rest, ",") {
			k, val, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(val, 10, 64)
			switch k {
			case "calls":
				v[0] = n
			case "usec":
				v[1] = n
			}
		}
		out[name] = v
	}
	return out
}
