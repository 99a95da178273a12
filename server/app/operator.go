package app

import (
	"net/http"
	"time"

	"keno/server/wallet"
)

// owedReport is the ops view of the calls owed to the operator's wallet
// (WALLET=seamless): how many, of which kind, how many failed before, and
// the oldest first.
type owedReport struct {
	Wallet   string         `json:"wallet"`
	Owed     int            `json:"owed"`
	ByKind   map[string]int `json:"by_kind"`
	Retried  int            `json:"retried"` // failed at least once
	Failing  int            `json:"failing"` // failed 5 times or more: look at the operator
	OldestMS int64          `json:"oldest_ms,omitempty"`
	Calls    []wallet.Call  `json:"calls"` // the 100 oldest
}

// opsOperator reports the calls owed to the operator (a scan: an ops
// tool, not a hot path). `keno-server reconcile` checks them against the
// journal.
func (a *App) opsOperator(w http.ResponseWriter, r *http.Request) {
	rep := owedReport{Wallet: a.Cfg.Operator.Wallet, ByKind: map[string]int{}, Calls: []wallet.Call{}}
	calls, err := a.Store.Outbox().Backlog(r.Context())
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "redis_unavailable", err.Error())
		return
	}
	for _, c := range calls {
		rep.ByKind[c.Kind]++
		if c.Tries > 0 {
			rep.Retried++
		}
		if c.Tries >= 5 {
			rep.Failing++
		}
		if age := time.Now().UnixMilli() - c.Since; age > rep.OldestMS {
			rep.OldestMS = age
		}
	}
	rep.Owed = len(calls)
	rep.Calls = calls[:min(len(calls), 100)]
	writeJSON(w, http.StatusOK, rep)
}
