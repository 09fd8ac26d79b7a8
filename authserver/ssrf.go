package authserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// This file is the guard on the addresses client metadata documents are
// fetched from (SSRF): a host name is resolved first and every address it
// names is checked before anything is dialed; only a public address is
// dialed, and the dialer checks again the address it connects to (so DNS
// cannot rebind around the check). The denied ranges are the IANA IPv4 and
// IPv6 Special-Purpose Address Registries (RFC 6890 and its successors),
// multicast, and IPv6 outside global unicast 2000::/3; an IPv4-mapped IPv6
// address is unmapped before the check, and IPv6 ranges that embed an IPv4
// address (NAT64, 6to4, Teredo, IPv4-compatible) are denied whole.

// deniedPrefixes are the ranges no document is fetched from.
var deniedPrefixes = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		// IPv4 Special-Purpose Address Registry.
		"0.0.0.0/8",          // "this network"
		"10.0.0.0/8",         // private-use
		"100.64.0.0/10",      // shared address space (CGNAT; 100.100.100.200 is a cloud metadata service)
		"127.0.0.0/8",        // loopback
		"169.254.0.0/16",     // link-local (cloud metadata services)
		"172.16.0.0/12",      // private-use
		"192.0.0.0/24",       // IETF protocol assignments (DS-Lite, NAT64 discovery, …)
		"192.0.2.0/24",       // documentation (TEST-NET-1)
		"192.31.196.0/24",    // AS112-v4
		"192.52.193.0/24",    // AMT
		"192.88.99.0/24",     // deprecated 6to4 relay anycast
		"192.168.0.0/16",     // private-use
		"192.175.48.0/24",    // direct delegation AS112
		"198.18.0.0/15",      // benchmarking
		"198.51.100.0/24",    // documentation (TEST-NET-2)
		"203.0.113.0/24",     // documentation (TEST-NET-3)
		"224.0.0.0/4",        // multicast
		"240.0.0.0/4",        // reserved
		"255.255.255.255/32", // limited broadcast
		// IPv6 Special-Purpose Address Registry.
		"::/128",            // unspecified
		"::1/128",           // loopback
		"::/96",             // IPv4-compatible (deprecated)
		"::ffff:0:0/96",     // IPv4-mapped (unmapped before the check; denied if seen)
		"64:ff9b::/96",      // IPv4/IPv6 translation (NAT64)
		"64:ff9b:1::/48",    // local-use IPv4/IPv6 translation
		"100::/64",          // discard-only
		"100:0:0:1::/64",    // dummy prefix
		"2001::/23",         // IETF protocol assignments (Teredo 2001::/32, ORCHID, benchmarking, …)
		"2001:db8::/32",     // documentation
		"2002::/16",         // 6to4
		"2620:4f:8000::/48", // direct delegation AS112
		"3fff::/20",         // documentation
		"5f00::/16",         // SRv6 SIDs
		"fc00::/7",          // unique-local
		"fe80::/10",         // link-local
		"ff00::/8",          // multicast
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// globalUnicast6 is where a fetched-from IPv6 address must be.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// errSpecialAddress: the address is in a denied range.
var errSpecialAddress = errors.New("special-purpose address")

// checkPublic returns an error naming the range when a is not an ordinary
// public address.
func checkPublic(a netip.Addr) error {
	a = a.WithZone("").Unmap()
	if !a.IsValid() {
		return fmt.Errorf("%w: no address", errSpecialAddress)
	}
	for _, p := range deniedPrefixes {
		if p.Contains(a) {
			return fmt.Errorf("%w: %s is in %s", errSpecialAddress, a, p)
		}
	}
	if a.Is6() && !globalUnicast6.Contains(a) {
		return fmt.Errorf("%w: %s is outside global unicast %s", errSpecialAddress, a, globalUnicast6)
	}
	return nil
}

// refusePrivate is the dialer's Control hook: it runs after the socket is
// made and before it connects, on the address about to be connected to.
func refusePrivate(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("refusing to fetch a client metadata document from %q: not an IP address and port", address)
	}
	if err := checkPublic(ap.Addr()); err != nil {
		return fmt.Errorf("refusing to fetch a client metadata document from %s: %w", address, err)
	}
	return nil
}

// guardedDialer resolves, checks, and only then dials.
type guardedDialer struct {
	// lookup resolves a host name (net.DefaultResolver.LookupNetIP).
	lookup func(ctx context.Context, network, host string) ([]netip.Addr, error)
	// dial connects to an address already checked (a net.Dialer whose
	// Control is refusePrivate).
	dial func(ctx context.Context, network, address string) (net.Conn, error)
	// check refuses an address (checkPublic when nil; tests let loopback
	// through, to serve documents from httptest servers).
	check func(netip.Addr) error
}

func newGuardedDialer() *guardedDialer {
	d := &net.Dialer{Timeout: cimdTimeout, Control: refusePrivate}
	return &guardedDialer{lookup: net.DefaultResolver.LookupNetIP, dial: d.DialContext}
}

// DialContext dials the first public address host resolves to; when any
// of its addresses is special-purpose, none is dialed (a name that mixes
// them is an attack, not a misconfiguration to work around).
func (g *guardedDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		lctx, cancel := context.WithTimeout(ctx, cimdTimeout)
		defer cancel()
		ipNet := "ip"
		switch network {
		case "tcp4":
			ipNet = "ip4"
		case "tcp6":
			ipNet = "ip6"
		}
		if addrs, err = g.lookup(lctx, ipNet, host); err != nil {
			return nil, err
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%s has no address", host)
	}
	check := g.check
	if check == nil {
		check = checkPublic
	}
	for _, a := range addrs {
		if err := check(a); err != nil {
			return nil, fmt.Errorf("refusing to fetch a client metadata document from %s: %w", host, err)
		}
	}
	var firstErr error
	for _, a := range addrs {
		c, err := g.dial(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}
