// Package session runs one session per WebSocket connection: it reads the
// player's requests, and while a ticket is in play a second goroutine
// streams the reveal as timed messages. All state that matters lives in
// Redis, behind the wallet (which alone names keys); a session only holds
// what is on screen, so any server can resume any game.
//
// # Goroutines, their owners and lifetimes
//
//   - Hub.Run (hub.go) owns the hub's loops and returns when all have
//     ended, when its context does: sweep (recovery.go: settles abandoned
//     games), flushSettled (recovery.go: drops settled games from the
//     recovery index, a last time on the way out), keepLeases (leases.go),
//     listenTakeovers (leases.go), watchControls (control.go: the
//     operator's orders), reap (hub.go: silent connections) and
//     admission.adjust (admission.go: how many games may be in play).
//   - The reader (Session.run, session.go): one per connection, started by
//     ServeHTTP (upgrade.go) through the registry (registry.go), which
//     counts it; lives as long as the connection. It reads frames and has
//     each request handled, one at a time, on a warm goroutine (warm.go)
//     so that its own stack stays small while idle. Shutdown ends it and
//     waits for it.
//   - The game (Session.play, game.go): at most one per session, while a
//     ticket (or resumed games) is in play; the reader waits for it when
//     the connection ends. It paces the timed messages (pacer.go: in
//     protocol version 1 each at its t; in version 2 each step of the game
//     at once, ahead, the game then waiting for its last t before it is
//     settled) and waits for the player's choices (choices.go).
//   - The flusher (writer.go): at most one per connection, while its
//     queue of outgoing bytes is not empty. It writes everything queued in
//     one system call: messages that fall due together leave together.
//   - warm.go's pool: goroutines that outlive one request by a short
//     idle time, so that deep stacks (Redis calls) are grown once; each
//     runs one function at a time for whoever handed it over.
//   - Short-lived, one per event: a farewell (Session.end: the closing
//     handshake must not make its caller wait for the peer), a drain at
//     shutdown (Session.drain), a reclaim of a lapsed lease (leaseLost).
//
// # Flow of one game
//
// ticket → summarise (handlers.go: the player's standing, the bank's
// prepared payment — seamless: the recovery entries and the debit's
// intent —, a summary) →
// confirm (handlers.go: admission, deal, the bank's bet — the Redis
// wallet's writes the recovery entries itself) → play and
// playGame (game.go: timed reveal, choices, the bank's settlement — which
// records the game's last choice, one nothing is shown after) →
// ticket_done.
//
// The bank (bank.go) is where the money moves: the Redis wallet itself,
// or (WALLET=seamless, package seamless) the operator's wallet, debited
// before the bet script runs and credited after each settlement, with the
// calls owed kept in Redis; the sweep sends what is owed before anything
// else it does for a player, so a game's recovery entry stays until its
// money is acknowledged.
package session
