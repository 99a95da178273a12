package session

import (
	"context"
	"errors"
	"time"

	"keno/server/wallet"
)

// retryTransient repeats op while it fails for a passing reason — Redis
// restarting or failing over, a write not yet replicated — with backoff,
// until ctx ends. Refusals (*wallet.Error, *wallet.FairMoved) are
// answers, not failures, and come back at once. Every operation retried
// this way is idempotent.
func retryTransient(ctx context.Context, op func() error) error {
	delay := 50 * time.Millisecond
	for {
		err := op()
		var we *wallet.Error
		var moved *wallet.FairMoved
		if err == nil || errors.As(err, &we) || errors.As(err, &moved) || ctx.Err() != nil {
			return err
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return err
		}
		delay = min(2*delay, time.Second)
	}
}
