// Package redisinfo reads the text Redis's INFO command answers, for the
// programs that report on Redis (the load tester) and the benchmarks that
// measure it. No client of its own: callers fetch the text.
package redisinfo

import (
	"strconv"
	"strings"
)

// CommandStats parses the text of INFO commandstats into each command's
// calls and microseconds ([calls, usec]): what the load tester reports per
// game and the wallet's benchmark per call.
func CommandStats(info string) map[string][2]int64 {
	out := map[string][2]int64{}
	for _, line := range strings.Split(info, "\n") {
		// cmdstat_evalsha:calls=12,usec=345,usec_per_call=28.75,…
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, found := strings.CutPrefix(name, "cmdstat_")
		if !ok || !found {
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
