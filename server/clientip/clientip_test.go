package clientip

import (
	"net/http"
	"net/netip"
	"testing"
)

func TestOf(t *testing.T) {
	lb := Resolver{Trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
	none := Resolver{}
	for _, tc := range []struct {
		r      Resolver
		remote string
		hdr    map[string]string
		want   string
	}{
		{none, "203.0.113.9:5000", map[string]string{"X-Forwarded-For": "1.2.3.4"}, "203.0.113.9"}, // not trusted: header ignored
		{lb, "203.0.113.9:5000", map[string]string{"X-Forwarded-For": "1.2.3.4"}, "203.0.113.9"},   // peer not a proxy
		{lb, "10.1.2.3:5000", map[string]string{"X-Forwarded-For": "198.51.100.7"}, "198.51.100.7"},
		{lb, "10.1.2.3:5000", map[string]string{"X-Forwarded-For": "6.6.6.6, 198.51.100.7, 10.9.9.9"}, "198.51.100.7"}, // spoofed left part skipped
		{lb, "10.1.2.3:5000", map[string]string{"Forwarded": `for=192.0.2.60;proto=https, for="[2001:db8::17]:4711"`}, "2001:db8::17"},
		{lb, "10.1.2.3:5000", map[string]string{"X-Forwarded-For": "garbage"}, "10.1.2.3"},
		{lb, "10.1.2.3:5000", nil, "10.1.2.3"},
		{lb, "[::1]:80", map[string]string{"X-Forwarded-For": "192.0.2.1"}, "192.0.2.1"},
	} {
		req := &http.Request{RemoteAddr: tc.remote, Header: http.Header{}}
		for k, v := range tc.hdr {
			req.Header.Set(k, v)
		}
		if got := tc.r.Of(req); got != tc.want {
			t.Errorf("%s %v: %s, want %s", tc.remote, tc.hdr, got, tc.want)
		}
	}
}
