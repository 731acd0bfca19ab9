package egress

import "net/netip"

// Class is the kind of network an IP address belongs to, as far as the guard
// is concerned. Only [Public] addresses are dialed for a host that was not
// explicitly allowed.
type Class int

// The classes, from the most to the least dialable. See [Classify] for the
// exact ranges.
const (
	// Public is a globally routable unicast address.
	Public Class = iota
	// Loopback is 127.0.0.0/8 or ::1.
	Loopback
	// Private is 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7 (unique
	// local) or fec0::/10 (deprecated site-local).
	Private
	// LinkLocal is 169.254.0.0/16 or fe80::/10.
	LinkLocal
	// SharedAddress is the carrier-grade NAT space 100.64.0.0/10.
	SharedAddress
	// Reserved is a special-purpose range that is not globally routable:
	// 192.0.0.0/24, 192.0.2.0/24, 192.88.99.0/24, 198.18.0.0/15,
	// 198.51.100.0/24, 203.0.113.0/24, 240.0.0.0/4 (but not the broadcast
	// address), IPv4-compatible ::/96, 100::/64, 2001::/32 (Teredo),
	// 2001:2::/48, 2001:db8::/32, 3fff::/20, 64:ff9b:1::/48 and every IPv6
	// address outside 2000::/3 not named elsewhere.
	Reserved
	// Metadata is a cloud instance-metadata or platform endpoint (see
	// [Classify] for the list). It is never dialed, even for an allowed host.
	Metadata
	// Unspecified is 0.0.0.0/8 ("this network", 0.0.0.0 reaches the local
	// host on Linux) or ::. Never dialed.
	Unspecified
	// Multicast is 224.0.0.0/4 or ff00::/8. Never dialed.
	Multicast
	// Broadcast is 255.255.255.255. Never dialed.
	Broadcast
	// Invalid is the zero netip.Addr. Never dialed.
	Invalid
)

var classNames = [...]string{
	Public:        "public",
	Loopback:      "loopback",
	Private:       "private",
	LinkLocal:     "link-local",
	SharedAddress: "shared (CGNAT)",
	Reserved:      "reserved",
	Metadata:      "cloud-metadata",
	Unspecified:   "unspecified",
	Multicast:     "multicast",
	Broadcast:     "broadcast",
	Invalid:       "invalid",
}

// String returns a lower-case name for the class, e.g. "loopback".
func (c Class) String() string {
	if c < 0 || int(c) >= len(classNames) {
		return "invalid"
	}
	return classNames[c]
}

// unlockable reports whether an explicitly allowed host may resolve to an
// address of class c. Metadata, unspecified, multicast, broadcast and invalid
// addresses are never dialed.
func (c Class) unlockable() bool {
	switch c {
	case Public, Loopback, Private, LinkLocal, SharedAddress, Reserved:
		return true
	}
	return false
}

// metadataAddrs are cloud instance-metadata and platform endpoints. They are
// refused even for an explicitly allowed host: no MCP server lives there, and
// they hand out credentials. Read-only.
var metadataAddrs = [...]netip.Addr{
	netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack, DigitalOcean, ... IMDS
	netip.MustParseAddr("169.254.170.2"),   // AWS ECS task metadata and credentials
	netip.MustParseAddr("fd00:ec2::254"),   // AWS IMDS over IPv6
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud metadata
	netip.MustParseAddr("192.0.0.192"),     // Oracle Cloud metadata
	netip.MustParseAddr("168.63.129.16"),   // Azure WireServer (a public address with platform powers)
}

type rangeClass struct {
	p netip.Prefix
	c Class
}

// v4Ranges and v6Ranges are checked in order; the first match wins.
// Read-only.
var v4Ranges = [...]rangeClass{
	{netip.MustParsePrefix("0.0.0.0/8"), Unspecified},
	{netip.MustParsePrefix("10.0.0.0/8"), Private},
	{netip.MustParsePrefix("100.64.0.0/10"), SharedAddress},
	{netip.MustParsePrefix("127.0.0.0/8"), Loopback},
	{netip.MustParsePrefix("169.254.0.0/16"), LinkLocal},
	{netip.MustParsePrefix("172.16.0.0/12"), Private},
	{netip.MustParsePrefix("192.0.0.0/24"), Reserved},
	{netip.MustParsePrefix("192.0.2.0/24"), Reserved},
	{netip.MustParsePrefix("192.88.99.0/24"), Reserved},
	{netip.MustParsePrefix("192.168.0.0/16"), Private},
	{netip.MustParsePrefix("198.18.0.0/15"), Reserved},
	{netip.MustParsePrefix("198.51.100.0/24"), Reserved},
	{netip.MustParsePrefix("203.0.113.0/24"), Reserved},
	{netip.MustParsePrefix("224.0.0.0/4"), Multicast},
	{netip.MustParsePrefix("255.255.255.255/32"), Broadcast},
	{netip.MustParsePrefix("240.0.0.0/4"), Reserved},
}

var v6Ranges = [...]rangeClass{
	{netip.MustParsePrefix("::/128"), Unspecified},
	{netip.MustParsePrefix("::1/128"), Loopback},
	{netip.MustParsePrefix("::/96"), Reserved}, // IPv4-compatible (deprecated)
	{netip.MustParsePrefix("64:ff9b:1::/48"), Reserved},
	{netip.MustParsePrefix("100::/64"), Reserved},
	{netip.MustParsePrefix("2001::/32"), Reserved}, // Teredo
	{netip.MustParsePrefix("2001:2::/48"), Reserved},
	{netip.MustParsePrefix("2001:db8::/32"), Reserved},
	{netip.MustParsePrefix("3fff::/20"), Reserved},
	{netip.MustParsePrefix("fc00::/7"), Private},
	{netip.MustParsePrefix("fe80::/10"), LinkLocal},
	{netip.MustParsePrefix("fec0::/10"), Private},
	{netip.MustParsePrefix("ff00::/8"), Multicast},
}

var (
	nat64Prefix  = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour    = netip.MustParsePrefix("2002::/16")
	globalV6     = netip.MustParsePrefix("2000::/3")
	mappedPrefix = netip.MustParsePrefix("::ffff:0:0/96")
)

// Classify returns the class of a. The zone of an IPv6 address is ignored.
// IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are classified as the IPv4
// address they carry; so are NAT64 addresses (64:ff9b::/96) and 6to4
// addresses (2002::/16) when the IPv4 address they embed is not public.
//
// Cloud-metadata addresses ([Metadata]) are 169.254.169.254 (AWS, GCP, Azure,
// OpenStack and others), 169.254.170.2 (AWS ECS), fd00:ec2::254 (AWS IPv6),
// 100.100.100.200 (Alibaba), 192.0.0.192 (Oracle) and 168.63.129.16 (Azure
// WireServer).
func Classify(a netip.Addr) Class {
	if !a.IsValid() {
		return Invalid
	}
	a = a.WithZone("")
	if mappedPrefix.Contains(a) {
		a = a.Unmap()
	}
	for _, m := range metadataAddrs {
		if a == m {
			return Metadata
		}
	}
	if a.Is4() {
		for _, r := range v4Ranges {
			if r.p.Contains(a) {
				return r.c
			}
		}
		return Public
	}
	b := a.As16()
	switch {
	case nat64Prefix.Contains(a):
		return Classify(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	case sixToFour.Contains(a):
		return Classify(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
	}
	for _, r := range v6Ranges {
		if r.p.Contains(a) {
			return r.c
		}
	}
	if !globalV6.Contains(a) {
		return Reserved
	}
	return Public
}
