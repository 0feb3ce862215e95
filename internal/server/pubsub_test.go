package server

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// TestPubSubDelivery publishes from one connection to subscribers on others, by channel and by
// pattern, in RESP2 and RESP3, and checks the exact frames Redis sends.
func TestPubSubDelivery(t *testing.T) { forEachIOMode(t, testPubSubDelivery) }

func testPubSubDelivery(t *testing.T) {
	s := startServer(t, nil)
	sub2 := dial(t, s.addr())
	sub3 := dial(t, s.addr())
	pub := dial(t, s.addr())
	sub3.do("HELLO", "3")

	sub2.do("SUBSCRIBE", "__sentinel__:hello")
	sub2.send([]byte("PSUBSCRIBE"), []byte("__sentinel__:*"))
	sub2.read()
	sub3.do("SUBSCRIBE", "__sentinel__:hello")

	if v := pub.do("PUBLISH", "__sentinel__:hello", "127.0.0.1,26379,abc,0"); v.Int != 3 {
		t.Fatalf("PUBLISH reached %d subscriptions, want 3", v.Int)
	}
	msg := "*3\r\n$7\r\nmessage\r\n$18\r\n__sentinel__:hello\r\n$21\r\n127.0.0.1,26379,abc,0\r\n"
	if got, _ := sub2.read(); string(got) != msg {
		t.Errorf("RESP2 message:\n%q\nwant\n%q", got, msg)
	}
	pmsg := "*4\r\n$8\r\npmessage\r\n$14\r\n__sentinel__:*\r\n$18\r\n__sentinel__:hello\r\n$21\r\n127.0.0.1,26379,abc,0\r\n"
	if got, _ := sub2.read(); string(got) != pmsg {
		t.Errorf("RESP2 pmessage:\n%q\nwant\n%q", got, pmsg)
	}
	if got, _ := sub3.read(); string(got) != ">3"+msg[2:] {
		t.Errorf("RESP3 push:\n%q", got)
	}

	// RESP3 allows commands while subscribed; a connection's own message comes before the
	// reply of its PUBLISH, as in Redis.
	sub3.send([]byte("PUBLISH"), []byte("__sentinel__:hello"), []byte("x"))
	if got, _ := sub3.read(); !bytes.HasPrefix(got, []byte(">3\r\n$7\r\nmessage")) {
		t.Errorf("own message: %q", got)
	}
	if _, v := sub3.read(); v.Int != 3 {
		t.Errorf("own PUBLISH reply: %v", v)
	}
	sub2.read()
	sub2.read()

	// Many messages in a row arrive whole and in order.
	for i := range 200 {
		pub.do("PUBLISH", "__sentinel__:hello", fmt.Sprint(i))
	}
	for i := range 200 {
		_, v := sub2.read()
		if v.Elems[2].Text() != fmt.Sprint(i) {
			t.Fatalf("message %d: %v", i, v)
		}
		sub2.read() // the pmessage
	}

	// A closed subscriber is forgotten; CLIENT KILL TYPE pubsub closes the others.
	sub3.nc.Close()
	waitFor(t, func() bool { return pub.do("PUBSUB", "NUMSUB", "__sentinel__:hello").Elems[1].Int == 1 })
	if v := pub.do("CLIENT", "KILL", "TYPE", "pubsub"); v.Int != 1 {
		t.Errorf("CLIENT KILL TYPE pubsub killed %d, want 1", v.Int)
	}
	waitFor(t, func() bool { return pub.do("PUBSUB", "NUMSUB", "__sentinel__:hello").Elems[1].Int == 0 })
	if v := pub.do("PUBSUB", "NUMPAT"); v.Int != 0 {
		t.Errorf("NUMPAT after the subscriber left: %v", v)
	}
}

// waitFor polls cond for up to 5 seconds.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not reached in 5 s")
}
