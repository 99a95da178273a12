package app

import (
	"os"
	"strings"
	"testing"
	"time"

	"keno/protocol"
	"keno/server/wallet"
)

// The wire and the wallet bound amounts apart (wallet does not import
// protocol); the app joins them, so a request the protocol lets through is
// one the wallet takes, and a cap DEPOSIT_CAP accepts is one a request can
// reach.
func TestAmountBoundsAgree(t *testing.T) {
	if protocol.MaxAmount != wallet.MaxAmount {
		t.Fatalf("protocol.MaxAmount %d, wallet.MaxAmount %d: one bound for every amount", protocol.MaxAmount, wallet.MaxAmount)
	}
}

// Bad configuration stops the server at start, naming the variable.
func TestConfigRefusals(t *testing.T) {
	strong := func(c string) string { return strings.Repeat(c, 32) }
	prod := map[string]string{"MODE": "production", "REDIS_URL": "redis://127.0.0.1:1", "ARCHIVE_URL": "postgres://keno@127.0.0.1:1/keno",
		"KENO_TOKEN_KEY": strong("t"), "KENO_SEAL_KEY": strong("s"), "KENO_OPS_TOKEN": strong("o")}
	with := func(base map[string]string, k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range base {
			m[a] = b
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		env  map[string]string
		want string // in the error; "" = accepted
	}{
		{map[string]string{}, ""}, // dev with the embedded Redis
		{map[string]string{"REDIS_URL": "redis://127.0.0.1:1"}, "MODE"},
		{map[string]string{"REDIS_URL": "redis://127.0.0.1:1", "MODE": "dev"}, ""},
		{prod, ""},
		{with(prod, "KENO_TOKEN_KEY", devTokenKey), "KENO_TOKEN_KEY"},
		{with(prod, "KENO_SEAL_KEY", devSealKey), "KENO_SEAL_KEY"},
		{with(prod, "KENO_OPS_TOKEN", strong("o")[:31]), "KENO_OPS_TOKEN"},
		{with(prod, "KENO_SEAL_KEY", strong("t")), "different"},
		{with(prod, "REDIS_URL", ""), "REDIS_URL"},
		{map[string]string{"GRACE": "soon"}, "GRACE"},
		{map[string]string{"DEPOSIT_CAP": "1e5"}, "DEPOSIT_CAP"},
		{map[string]string{"TICKET_MAX": "60000"}, "TICKET_MAX"},
		{map[string]string{"CONN_RATE_IP": "-1"}, "CONN_RATE_IP"},
		{map[string]string{"TRUSTED_PROXIES": "10.0.0.0/33"}, "TRUSTED_PROXIES"},
		{map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8, 192.0.2.7"}, ""},
		{map[string]string{"ALLOWED_ORIGINS": "https://x.example/path"}, "ALLOWED_ORIGINS"},
		{map[string]string{"LOG_LEVEL": "chatty"}, "LOG_LEVEL"},
		{map[string]string{"MODE": "staging"}, "MODE"},
		{with(prod, "ARCHIVE_URL", ""), "ARCHIVE_URL"},
		{map[string]string{"HOT_WINDOW": "10ms"}, "HOT_WINDOW"},
		{map[string]string{"RESULT_HOLD": "-2s"}, "RESULT_HOLD"},
		{map[string]string{"RESULT_HOLD": "2m"}, "RESULT_HOLD"},
		{map[string]string{"RESULT_HOLD": "0s"}, ""},
		{map[string]string{"WALLET": "paypal"}, "WALLET"},
		{map[string]string{"WALLET": "seamless"}, "OPERATOR_URL"},
		{map[string]string{"WALLET": "seamless", "OPERATOR_URL": "ftp://op.example"}, "OPERATOR_URL"},
		{map[string]string{"WALLET": "seamless", "OPERATOR_URL": "https://user:pw@op.example"}, "OPERATOR_URL"},
		{map[string]string{"WALLET": "seamless", "OPERATOR_URL": "http://127.0.0.1:9400"}, ""}, // dev: the dev key
		{map[string]string{"WALLET": "seamless", "OPERATOR_URL": "http://127.0.0.1:9400", "OPERATOR_TIMEOUT": "2h"}, "OPERATOR_TIMEOUT"},
		{map[string]string{"WALLET": "seamless", "OPERATOR_URL": "http://127.0.0.1:9400", "OPERATOR_CURRENCY": "euro"}, "OPERATOR_CURRENCY"},
		{with(with(prod, "WALLET", "seamless"), "OPERATOR_URL", "https://op.example"), "OPERATOR_KEY"},
		{with(with(with(prod, "WALLET", "seamless"), "OPERATOR_URL", "http://op.example"), "OPERATOR_KEY", strong("k")), "https"},
		{with(with(with(prod, "WALLET", "seamless"), "OPERATOR_URL", "https://op.example"), "OPERATOR_KEY", devOperatorKey), "OPERATOR_KEY"},
		{with(with(with(prod, "WALLET", "seamless"), "OPERATOR_URL", "https://op.example"), "OPERATOR_KEY", strong("s")), "differ"},
		{with(with(with(prod, "WALLET", "seamless"), "OPERATOR_URL", "https://op.example"), "OPERATOR_KEY", strong("k")), ""},
	} {
		for _, k := range []string{"MODE", "REDIS_URL", "KENO_TOKEN_KEY", "KENO_SEAL_KEY", "KENO_OPS_TOKEN", "GRACE", "DEPOSIT_CAP",
			"TICKET_MAX", "CONN_RATE_IP", "TRUSTED_PROXIES", "ALLOWED_ORIGINS", "LOG_LEVEL", "RESULT_HOLD", "ARCHIVE_URL", "HOT_WINDOW",
			"WALLET", "OPERATOR_URL", "OPERATOR_KEY", "OPERATOR_TIMEOUT", "OPERATOR_CURRENCY"} {
			t.Setenv(k, tc.env[k])
			if _, ok := tc.env[k]; !ok {
				unsetenv(t, k)
			}
		}
		_, err := ParseConfig(nil)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: refused: %v", tc.env, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want an error naming %s", tc.env, err, tc.want)
		}
	}
}

func unsetenv(t *testing.T, k string) {
	t.Helper()
	t.Setenv(k, "") // restores the old value at the end of the test
	os.Unsetenv(k)
}

// Redis URLs as managed clouds give them, read by go-redis's own parsers:
// user names, passwords, TLS, options, and cluster node lists.
func TestRedisURLs(t *testing.T) {
	c, err := clusterOptions("rediss+cluster://app:s3cret@10.0.0.1:7000,10.0.0.2:7001,10.0.0.3:7002?dial_timeout=3s&pool_size=50")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Addrs, " ") != "10.0.0.1:7000 10.0.0.2:7001 10.0.0.3:7002" || c.Username != "app" || c.Password != "s3cret" ||
		c.TLSConfig == nil || c.DialTimeout != 3*time.Second || c.PoolSize != 50 {
		t.Errorf("rediss+cluster: %+v", c)
	}
	c, err = clusterOptions("redis+cluster://127.0.0.1:7000")
	if err != nil || len(c.Addrs) != 1 || c.TLSConfig != nil {
		t.Errorf("redis+cluster with one node: %+v %v", c, err)
	}
	for _, bad := range []string{"redis+cluster://", "redis+cluster://a:1,,b:2", "redis+cluster://a:1?pool_size=x", "redis+cluster://a:1?bogus=1"} {
		if _, err := clusterOptions(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	for _, u := range []string{"redis://default:pw@127.0.0.1:1/2?dial_timeout=1s", "rediss://user:pw@cache.example:6380", "unix:///tmp/redis.sock?db=3"} {
		rdb, _, err := Connect(u, false)
		if err != nil {
			t.Errorf("%s: %v", u, err)
			continue
		}
		rdb.Close()
	}
	if _, _, err := Connect("redis://127.0.0.1:1?bogus=1", false); err == nil || !strings.Contains(err.Error(), "REDIS_URL") {
		t.Errorf("an unknown option: %v", err)
	}
}
