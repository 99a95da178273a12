// Package clientip names the client of an HTTP request. Behind a load
// balancer every connection comes from the balancer's address; the client
// is then in X-Forwarded-For or Forwarded (RFC 7239). Those headers are
// anyone's to write, so they are believed only when the connection comes
// from a trusted proxy, and only as far back as the chain stays trusted.
package clientip

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Resolver knows which proxies to believe.
type Resolver struct {
	Trusted []netip.Prefix
}

func (r Resolver) trusted(a netip.Addr) bool {
	for _, p := range r.Trusted {
		if p.Contains(a.Unmap()) {
			return true
		}
	}
	return false
}

// Of returns the client's address: the peer's, or — when the peer is a
// trusted proxy — the nearest address in the forwarding chain that is not
// itself a trusted proxy.
func (r Resolver) Of(req *http.Request) string {
	peer := parseHost(req.RemoteAddr)
	if !peer.IsValid() {
		return req.RemoteAddr
	}
	if !r.trusted(peer) {
		return peer.Unmap().String()
	}
	chain := forwardedFor(req.Header)
	if len(chain) == 0 {
		chain = xForwardedFor(req.Header)
	}
	client := peer
	for i := len(chain) - 1; i >= 0; i-- {
		a := parseHost(chain[i])
		if !a.IsValid() {
			break // garbage in the chain: stop at the last address we could trust
		}
		client = a
		if !r.trusted(a) {
			break
		}
	}
	return client.Unmap().String()
}

// parseHost reads an address with or without a port, IPv6 in brackets or not.
func parseHost(s string) netip.Addr {
	s = strings.TrimSpace(s)
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return netip.Addr{}
	}
	return a
}

func xForwardedFor(h http.Header) []string {
	var out []string
	for _, line := range h.Values("X-Forwarded-For") {
		out = append(out, strings.Split(line, ",")...)
	}
	return out
}

// forwardedFor lists the for= parameters of Forwarded, in order.
func forwardedFor(h http.Header) []string {
	var out []string
	for _, line := range h.Values("Forwarded") {
		for _, hop := range strings.Split(line, ",") {
			for _, pair := range strings.Split(hop, ";") {
				k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if ok && strings.EqualFold(k, "for") {
					out = append(out, strings.Trim(v, `"`))
				}
			}
		}
	}
	return out
}
