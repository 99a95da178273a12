package wallet

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// The cluster-wide keys and channels: what every server shares beyond the
// players' own keys. Like those, they are named here and nowhere else.
const (
	maintenanceKey = "keno:maintenance" // the operator's maintenance message; absent: open
	bigWinsKey     = "keno:bigwins"     // the latest big wins, newest first
	serversKey     = "keno:servers"     // each server's heartbeat for the live-ops feed
	bigWinsKept    = 20
)

// Channel is a cluster-wide announcement channel (Redis pub/sub): what is
// published reaches every server listening at that moment, and no other.
type Channel string

const (
	TakeoverChannel Channel = "keno:takeover" // "player|fence": a newer session owns the player
	ControlChannel  Channel = "keno:control"  // the operator's orders (JSON)
)

// Publish announces msg on c.
func (s *Store) Publish(ctx context.Context, c Channel, msg []byte) error {
	return s.rdb.Publish(ctx, string(c), msg).Err()
}

// Subscribe listens on c until ctx ends; the channel returned closes then.
func (s *Store) Subscribe(ctx context.Context, c Channel, buffer int) <-chan *redis.Message {
	sub := s.rdb.Subscribe(ctx, string(c))
	context.AfterFunc(ctx, func() { sub.Close() })
	return sub.Channel(redis.WithChannelSize(buffer))
}

// SetMaintenance starts (text != "") or ends maintenance for every server.
func (s *Store) SetMaintenance(ctx context.Context, text string) error {
	if text == "" {
		return s.rdb.Del(ctx, maintenanceKey).Err()
	}
	return s.rdb.Set(ctx, maintenanceKey, text, 0).Err()
}

// Maintenance returns the maintenance message in force ("" if none).
func (s *Store) Maintenance(ctx context.Context) (string, error) {
	v, err := s.rdb.Get(ctx, maintenanceKey).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, err
}

// AddBigWin records a big win (JSON) in the cluster's short list.
func (s *Store) AddBigWin(ctx context.Context, win []byte) error {
	pipe := s.rdb.Pipeline()
	pipe.LPush(ctx, bigWinsKey, win)
	pipe.LTrim(ctx, bigWinsKey, 0, bigWinsKept-1)
	_, err := pipe.Exec(ctx)
	return err
}

// Heartbeat records this server's heartbeat (JSON) and returns, in the
// same round trip, every server's and the latest n big wins.
func (s *Store) Heartbeat(ctx context.Context, server string, hb []byte, n int) (servers map[string]string, bigWins []string, err error) {
	pipe := s.rdb.Pipeline()
	pipe.HSet(ctx, serversKey, server, hb)
	all := pipe.HGetAll(ctx, serversKey)
	wins := pipe.LRange(ctx, bigWinsKey, 0, int64(n-1))
	_, err = pipe.Exec(ctx)
	return all.Val(), wins.Val(), err
}

// ForgetServer drops the heartbeat of a server gone quiet.
func (s *Store) ForgetServer(ctx context.Context, server string) error {
	return s.rdb.HDel(ctx, serversKey, server).Err()
}
