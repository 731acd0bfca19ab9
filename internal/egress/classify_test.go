package egress_test

import (
	"net/netip"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/egress"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		addr string
		want egress.Class
	}{
		// loopback
		{"127.0.0.1", egress.Loopback}, {"127.0.0.0", egress.Loopback}, {"127.255.255.255", egress.Loopback},
		{"::1", egress.Loopback}, {"::ffff:127.0.0.1", egress.Loopback}, {"128.0.0.1", egress.Public},
		// private
		{"10.0.0.0", egress.Private}, {"10.255.255.255", egress.Private}, {"9.255.255.255", egress.Public}, {"11.0.0.0", egress.Public},
		{"172.16.0.0", egress.Private}, {"172.31.255.255", egress.Private}, {"172.15.255.255", egress.Public}, {"172.32.0.0", egress.Public},
		{"192.168.0.0", egress.Private}, {"192.168.255.255", egress.Private}, {"192.167.255.255", egress.Public}, {"192.169.0.0", egress.Public},
		{"fc00::", egress.Private}, {"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", egress.Private}, {"fec0::1", egress.Private},
		{"::ffff:10.1.2.3", egress.Private}, {"::ffff:192.168.1.1", egress.Private},
		// link-local
		{"169.254.0.1", egress.LinkLocal}, {"169.254.255.255", egress.LinkLocal}, {"169.253.255.255", egress.Public}, {"169.255.0.0", egress.Public},
		{"fe80::1", egress.LinkLocal}, {"fe80::1%eth0", egress.LinkLocal}, {"febf:ffff::1", egress.LinkLocal},
		// metadata (before their enclosing ranges)
		{"169.254.169.254", egress.Metadata}, {"169.254.170.2", egress.Metadata}, {"fd00:ec2::254", egress.Metadata},
		{"100.100.100.200", egress.Metadata}, {"192.0.0.192", egress.Metadata}, {"168.63.129.16", egress.Metadata},
		{"::ffff:169.254.169.254", egress.Metadata}, {"::ffff:100.100.100.200", egress.Metadata},
		{"64:ff9b::a9fe:a9fe", egress.Metadata}, {"2002:a9fe:a9fe::1", egress.Metadata},
		{"169.254.169.253", egress.LinkLocal}, {"fd00:ec2::253", egress.Private},
		// unspecified / this network
		{"0.0.0.0", egress.Unspecified}, {"0.255.255.255", egress.Unspecified}, {"::", egress.Unspecified}, {"::ffff:0.0.0.0", egress.Unspecified},
		{"1.0.0.0", egress.Public},
		// CGNAT
		{"100.64.0.0", egress.SharedAddress}, {"100.127.255.255", egress.SharedAddress}, {"100.63.255.255", egress.Public}, {"100.128.0.0", egress.Public},
		// multicast and broadcast
		{"224.0.0.1", egress.Multicast}, {"239.255.255.255", egress.Multicast}, {"ff02::1", egress.Multicast}, {"ff0e::1", egress.Multicast},
		{"255.255.255.255", egress.Broadcast}, {"::ffff:255.255.255.255", egress.Broadcast},
		// reserved
		{"192.0.0.8", egress.Reserved}, {"192.0.2.1", egress.Reserved}, {"192.88.99.1", egress.Reserved}, {"198.18.0.1", egress.Reserved},
		{"198.19.255.255", egress.Reserved}, {"198.20.0.0", egress.Public}, {"198.51.100.7", egress.Reserved}, {"203.0.113.9", egress.Reserved},
		{"240.0.0.1", egress.Reserved}, {"255.255.255.254", egress.Reserved},
		{"::7f00:1", egress.Reserved}, {"100::1", egress.Reserved}, {"2001::1", egress.Reserved}, {"2001:2::1", egress.Reserved},
		{"2001:db8::1", egress.Reserved}, {"3fff::1", egress.Reserved}, {"64:ff9b:1::1", egress.Reserved}, {"1234::1", egress.Reserved},
		{"4000::1", egress.Reserved},
		// embedded IPv4 in NAT64 / 6to4
		{"64:ff9b::7f00:1", egress.Loopback}, {"64:ff9b::a00:1", egress.Private}, {"64:ff9b::808:808", egress.Public},
		{"2002:7f00:1::", egress.Loopback}, {"2002:c0a8:101::1", egress.Private}, {"2002:808:808::1", egress.Public},
		// public
		{"8.8.8.8", egress.Public}, {"93.184.216.34", egress.Public}, {"::ffff:8.8.8.8", egress.Public},
		{"2606:4700:4700::1111", egress.Public}, {"2a00:1450:4001:81b::200e", egress.Public}, {"223.255.255.255", egress.Public},
	}
	for _, tc := range cases {
		if got := egress.Classify(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("Classify(%s) = %s, want %s", tc.addr, got, tc.want)
		}
	}
	if got := egress.Classify(netip.Addr{}); got != egress.Invalid {
		t.Errorf("Classify(zero) = %s", got)
	}
	if egress.Loopback.String() != "loopback" || egress.Class(99).String() != "invalid" {
		t.Error("Class.String")
	}
}
