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
	Wallet string `json:"wallet"`
	wallet.OwedTally
	Calls []wallet.Call `json:"calls"` // the 100 oldest
}

// opsOperator reports the calls owed to the operator (a scan: an ops
// tool, not a hot path). `keno-server reconcile` checks them against the
// journal.
func (a *App) opsOperator(w http.ResponseWriter, r *http.Request) {
	calls, err := a.Store.Outbox().Backlog(r.Context())
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "redis_unavailable", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, owedReport{Wallet: a.Cfg.Operator.Wallet, OwedTally: wallet.Tally(calls, time.Now()),
		Calls: calls[:min(len(calls), 100)]})
}
