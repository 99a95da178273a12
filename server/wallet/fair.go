package wallet

import (
	"context"
	"encoding/hex"
	"errors"

	"github.com/redis/go-redis/v9"

	"keno/engine"
)

// Provably fair state per player: a server seed whose SHA-256 the player
// sees before betting, the player's own client seed, and a nonce counting
// the games played on the seed. Rotating the seed reveals the old one, so
// the player can recompute every game dealt from it (engine.FairSource).

var (
	nextNonceScript = redis.NewScript(`
local seed = redis.call('HGET', KEYS[1], 'seed')
if not seed then seed = ARGV[1]; redis.call('HSET', KEYS[1], 'seed', seed) end
local last = redis.call('HINCRBY', KEYS[1], 'nonce', ARGV[2])
return {seed, redis.call('HGET', KEYS[1], 'client') or '', tostring(last - tonumber(ARGV[2]) + 1)}`)
	rotateScript = redis.NewScript(`
local old = redis.call('HMGET', KEYS[1], 'seed', 'nonce')
redis.call('HSET', KEYS[1], 'seed', ARGV[1], 'nonce', 0)
return {old[1] or '', old[2] or '0'}`)
)

// FairState is what a player may see before betting.
type FairState struct {
	Commit     string `json:"commit"`
	ClientSeed string `json:"client_seed"`
	NextNonce  uint64 `json:"next_nonce"`
}

// Seeds reserves n consecutive nonces for a ticket and returns the server
// seed (kept server-side until rotation), the client seed and the first nonce.
func (s *Store) Seeds(ctx context.Context, player string, n int) (seed []byte, client string, first uint64, err error) {
	fresh := hex.EncodeToString(engine.NewServerSeed())
	r, err := s.run(ctx, nextNonceScript, []string{keysOf(player).fair()}, fresh, n)
	if err != nil {
		return nil, "", 0, err
	}
	seed, err = hex.DecodeString(str(r, 0))
	return seed, str(r, 1), uint64(num(r, 2)), err
}

// FairInputs are what the player's next game is dealt from: the server
// seed (kept server-side until rotation), the client seed and the next
// nonce.
type FairInputs struct {
	Seed   []byte
	Client string
	Next   uint64
}

// Public is what the player may see of the inputs before betting.
func (f FairInputs) Public() FairState {
	return FairState{Commit: engine.SeedCommitment(f.Seed), ClientSeed: f.Client, NextNonce: f.Next}
}

// Fair returns the player's current inputs (creating a seed if needed).
func (s *Store) Fair(ctx context.Context, player string) (FairInputs, error) {
	seed, client, next, err := s.Seeds(ctx, player, 0)
	return FairInputs{Seed: seed, Client: client, Next: next}, err
}

// SetClientSeed sets the player's client seed for the next games.
func (s *Store) SetClientSeed(ctx context.Context, player, seed string) error {
	if len(seed) > 64 {
		return errors.New("client seed must be at most 64 characters")
	}
	return s.rdb.HSet(ctx, keysOf(player).fair(), "client", seed).Err()
}

// RotateSeed replaces the server seed and reveals the old one (hex) with
// the number of games dealt from it; it returns the new commitment.
func (s *Store) RotateSeed(ctx context.Context, player string) (revealed string, games int64, commit string, err error) {
	seed := engine.NewServerSeed()
	k := keysOf(player).fair()
	r, err := s.run(ctx, rotateScript, []string{k}, hex.EncodeToString(seed))
	if err != nil {
		return "", 0, "", err
	}
	revealed = str(r, 0)
	if old, err := hex.DecodeString(revealed); err == nil && len(old) > 0 {
		// Kept by its commitment, so the player can check any game dealt
		// from it later, from any device ("verify this game"). Rotations
		// are rare: a few fields per player.
		if err := s.rdb.HSet(ctx, k, revealedField(engine.SeedCommitment(old)), revealed).Err(); err != nil {
			return "", 0, "", err
		}
	}
	return revealed, num(r, 1), engine.SeedCommitment(seed), nil
}

func revealedField(commit string) string { return "revealed:" + commit }

// RevealedSeed returns the server seed (hex) whose commitment is commit,
// once a rotation has revealed it; "" while it is still in use.
func (s *Store) RevealedSeed(ctx context.Context, player, commit string) (string, error) {
	v, err := s.rdb.HGet(ctx, keysOf(player).fair(), revealedField(commit)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, err
}
