// Package webhookstest gives tests a real DNS server on loopback whose
// answers they script, so that the webhook guard's lookups (before an
// attempt and at dial time) can be made to see private, public or changing
// answers without any packet leaving the machine.
package webhookstest

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// DNS is a DNS server on 127.0.0.1 over UDP. It answers every A question,
// whatever the name, with the addresses Answer gives for the n-th A
// question it received (from 1); AAAA questions get no records, so a
// lookup sees exactly the IPv4 answers scripted.
type DNS struct {
	conn   net.PacketConn
	answer func(n int) []netip.Addr
	mu     sync.Mutex
	n      int
}

// NewDNS starts a DNS server answering the n-th A question with answer(n);
// it stops when the test ends.
func NewDNS(t testing.TB, answer func(n int) []netip.Addr) *DNS {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("dns server: %v", err)
	}
	d := &DNS{conn: conn, answer: answer}
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.serve()
	}()
	t.Cleanup(func() {
		_ = conn.Close()
		<-done
	})
	return d
}

// Resolver is a resolver that asks this server only.
func (d *DNS) Resolver() *net.Resolver {
	addr := d.conn.LocalAddr().String()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dialer net.Dialer
			return dialer.DialContext(ctx, "udp", addr)
		},
	}
}

// Questions is how many A questions the server has answered.
func (d *DNS) Questions() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

func (d *DNS) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := d.conn.ReadFrom(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		if reply, ok := d.reply(buf[:n]); ok {
			_, _ = d.conn.WriteTo(reply, from)
		}
	}
}

// reply builds the answer to one query; ok is false for a packet that is
// not one.
func (d *DNS) reply(query []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true})
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil, false
	}
	if q.Type == dnsmessage.TypeA {
		d.mu.Lock()
		d.n++
		n := d.n
		d.mu.Unlock()
		for _, ip := range d.answer(n) {
			if !ip.Is4() {
				continue
			}
			rh := dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 0}
			if b.AResource(rh, dnsmessage.AResource{A: ip.As4()}) != nil {
				return nil, false
			}
		}
	}
	out, err := b.Finish()
	return out, err == nil
}
