package protocol

import "keno/engine"

// Message is any server message; which fields are set depends on Type.
type Message struct {
	Type   string `json:"type"`
	ID     string `json:"id,omitempty"`   // echo of the request's id
	T      int64  `json:"t,omitempty"`    // timed messages: scheduled send time, Unix ms
	Game   string `json:"game,omitempty"` // game id
	Ticket string `json:"ticket,omitempty"`

	Version int         `json:"version,omitempty"` // welcome
	Now     int64       `json:"now,omitempty"`     // welcome (version 2): the server's clock, Unix ms, to place t on the client's own
	Player  string      `json:"player,omitempty"`  // welcome
	Config  *GameConfig `json:"config,omitempty"`  // welcome
	Balance *int64      `json:"balance,omitempty"` // cents
	Fair    *FairInfo   `json:"fair,omitempty"`
	Limits  *LimitsInfo `json:"limits,omitempty"`

	Grids    []GridSummary `json:"grids,omitempty"`    // summary
	Total    int64         `json:"total,omitempty"`    // summary: ticket stake
	Warnings []string      `json:"warnings,omitempty"` // summary
	Games    []GameRef     `json:"games,omitempty"`    // accepted, resume; welcome: the games about to resume

	Index  int          `json:"index,omitempty"`  // game_start: position in the ticket
	Of     int          `json:"of,omitempty"`     // game_start: games in the ticket
	Picks  engine.Picks `json:"picks,omitempty"`  // game_start
	Stake  int64        `json:"stake,omitempty"`  // game_start
	Pos    int          `json:"pos"`              // color, number, soc_draw: 0-based position
	Color  string       `json:"color,omitempty"`  // color
	Number int          `json:"number,omitempty"` // number, soc_draw
	Hit    bool         `json:"hit,omitempty"`    // number, soc_draw: one of the player's numbers
	Effect string       `json:"effect,omitempty"` // number: gold, red, green when the colour takes effect

	Main   *engine.Main   `json:"main,omitempty"`   // main_result
	Hits   int            `json:"hits,omitempty"`   // soc_result
	Gain   int64          `json:"gain,omitempty"`   // soc_result: the gain that replaces the main one
	Box    *int           `json:"box,omitempty"`    // extra_result
	Boxes  []int64        `json:"boxes,omitempty"`  // extra_result: all five prizes
	Prize  int64          `json:"prize,omitempty"`  // extra_result
	Win    int64          `json:"win,omitempty"`    // settled, ticket_done
	Wins   []int64        `json:"wins,omitempty"`   // ticket_done: each grid's win, in ticket order
	Result *engine.Result `json:"result,omitempty"` // settled

	History []HistoryItem `json:"history,omitempty"` // history
	Next    int64         `json:"next,omitempty"`    // history: cursor for the next page
	Detail  *GameDetail   `json:"detail,omitempty"`  // game

	Error *Error `json:"error,omitempty"` // error
	Text  string `json:"text,omitempty"`  // session_taken_over, server_shutdown
}

// Offers: the game waits for the player's choice after each.
const (
	TSoCOffer   = "soc_offer"   // Stop or Continue? (answer: choice)
	TExtraOffer = "extra_offer" // which box? (answer: box)
)

// GameConfig tells the client what it may ask for.
type GameConfig struct {
	Stakes       []int64 `json:"stakes"`
	DefaultStake int64   `json:"default_stake"`
	MinPicks     int     `json:"min_picks"`
	MaxPicks     int     `json:"max_picks"`
	Grid         int     `json:"grid"`
	MaxGrids     int     `json:"max_grids"`
	TicketMax    int64   `json:"ticket_max"`
	ColorMS      int64   `json:"color_ms"`       // interval between colours in step 1
	NumberMS     int64   `json:"number_ms"`      // interval between numbers in step 2
	HoldMS       int64   `json:"hold_ms"`        // a settled game stays on screen this long before the next game_start
	LimitRaiseMS int64   `json:"limit_raise_ms"` // a raised limit applies after this delay; a lowered one at once
	DevMode      bool    `json:"dev_mode"`       // deposits from the client are allowed
	// NotDurable: this (dev) server runs on a Redis that does not keep the
	// durability contract: an accepted bet or a payout may vanish if Redis
	// crashes. Never set in production, which refuses to start so.
	NotDurable bool `json:"not_durable,omitempty"`
}

// FairInfo is the provably fair state: the commitment to the server seed
// in use, and on rotation the revealed previous seed.
type FairInfo struct {
	Commit     string `json:"commit"`
	ClientSeed string `json:"client_seed"`
	NextNonce  uint64 `json:"next_nonce,omitempty"`
	Revealed   string `json:"revealed,omitempty"` // previous seed, hex
	Games      int64  `json:"games,omitempty"`    // games dealt from the revealed seed
}

// LimitsInfo are the player's responsible-gaming limits.
type LimitsInfo struct {
	DepositCap        int64 `json:"deposit_cap"`
	DepositCapPending int64 `json:"deposit_cap_pending,omitempty"`
	DepositCapAt      int64 `json:"deposit_cap_pending_at,omitempty"`
	LossLimit         int64 `json:"loss_limit"` // −1: none
	LossLimitPending  int64 `json:"loss_limit_pending,omitempty"`
	LossLimitAt       int64 `json:"loss_limit_pending_at,omitempty"`
	ExcludedUntil     int64 `json:"excluded_until,omitempty"`
	LostToday         int64 `json:"lost_today"`
	DepositedWeek     int64 `json:"deposited_week"`
}

// GridSummary is one grid of a ticket under review.
type GridSummary struct {
	Picks engine.Picks `json:"picks"`
	Stake int64        `json:"stake"`
	Quick bool         `json:"quick,omitempty"`
}

// GameRef names an accepted game and its provably fair inputs.
type GameRef struct {
	Game   string `json:"game"`
	Index  int    `json:"index"`
	Nonce  uint64 `json:"nonce"`
	Commit string `json:"commit"`
}

// HistoryItem is one game in the history list.
type HistoryItem struct {
	Game    string       `json:"game"`
	Ticket  string       `json:"ticket"`
	Created int64        `json:"created"`
	Picks   engine.Picks `json:"picks"`
	Stake   int64        `json:"stake"`
	Status  string       `json:"status"`
	Win     int64        `json:"win"`
}

// GameDetail is one game in full: the outcome fixed at acceptance, the
// choices made and the settlement.
type GameDetail struct {
	HistoryItem
	Index    int            `json:"index"`
	Of       int            `json:"of"`
	Fair     FairRef        `json:"fair"`
	Outcome  engine.Outcome `json:"outcome"`
	Continue *bool          `json:"continue,omitempty"`
	Box      *int           `json:"box,omitempty"`
	Result   *engine.Result `json:"result,omitempty"`
}

// FairRef identifies how a game was dealt.
type FairRef struct {
	Commit     string `json:"commit"`
	ClientSeed string `json:"client_seed"`
	Nonce      uint64 `json:"nonce"`
	// ServerSeed (hex) once a rotation has revealed it: with it the game
	// can be recomputed (FAIRNESS below).
	ServerSeed string `json:"server_seed,omitempty"`
}

// Fail builds an error reply to request id.
func Fail(id string, e *Error) *Message { return &Message{Type: TError, ID: id, Error: e} }
