//go:build linux

package uring

import (
	"bytes"
	"net"
	"syscall"
	"testing"
	"time"
)

// sockets returns the descriptors of both ends of a loopback TCP connection, non-blocking.
func sockets(t *testing.T) (a, b int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	dup := func(c net.Conn) int {
		f, err := c.(*net.TCPConn).File()
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		fd, err := syscall.Dup(int(f.Fd()))
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		syscall.SetNonblock(fd, true)
		t.Cleanup(func() { syscall.Close(fd) })
		return fd
	}
	return dup(cc), dup(sc)
}

func newRing(t *testing.T) *Ring {
	t.Helper()
	r, err := New(8)
	if err != nil {
		t.Skipf("io_uring unavailable here: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestSendRecv(t *testing.T) {
	r := newRing(t)
	a, b := sockets(t)
	a2, b2 := sockets(t)
	if !r.Send(a, []byte("hello"), 1) || !r.Send(a2, []byte("world!"), 2) {
		t.Fatal("queue refused")
	}
	got, err := r.Submit()
	if err != nil {
		t.Fatal(err)
	}
	res := map[uint64]int32{}
	for _, c := range got {
		res[c.Tag] = c.Res
	}
	if len(got) != 2 || res[1] != 5 || res[2] != 6 {
		t.Fatalf("send results %v", got)
	}
	time.Sleep(10 * time.Millisecond) // loopback delivery is immediate, but be safe
	buf, buf2, buf3 := make([]byte, 16), make([]byte, 16), make([]byte, 16)
	r.Recv(b, buf, 10)
	r.Recv(b2, buf2, 20)
	r.Recv(a, buf3, 30) // nothing was sent to a
	got, err = r.Submit()
	if err != nil {
		t.Fatal(err)
	}
	res = map[uint64]int32{}
	for _, c := range got {
		res[c.Tag] = c.Res
	}
	if res[10] != 5 || !bytes.Equal(buf[:5], []byte("hello")) || res[20] != 6 || !bytes.Equal(buf2[:6], []byte("world!")) {
		t.Fatalf("recv results %v: %q %q", got, buf, buf2)
	}
	if res[30] != -int32(syscall.EAGAIN) {
		t.Fatalf("recv on an empty socket: %d, want -EAGAIN", res[30])
	}
}

// A socket whose peer does not read fills up: the ring reports a short write or -EAGAIN, and
// Submit does not wait for the peer.
func TestSendFull(t *testing.T) {
	r := newRing(t)
	a, _ := sockets(t)
	chunk := make([]byte, 1<<20)
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.Send(a, chunk, 7)
		got, err := r.Submit()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("got %v", got)
		}
		if got[0].Res == -int32(syscall.EAGAIN) {
			return
		}
		if got[0].Res < 0 {
			t.Fatalf("send: errno %d", -got[0].Res)
		}
		if time.Now().After(deadline) {
			t.Fatal("the socket never filled up")
		}
	}
}

func TestSendClosedPeer(t *testing.T) {
	r := newRing(t)
	a, b := sockets(t)
	syscall.Close(b)
	var last int32
	for range 10 {
		r.Send(a, []byte("x"), 1)
		got, err := r.Submit()
		if err != nil {
			t.Fatal(err)
		}
		if last = got[0].Res; last < 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if last != -int32(syscall.EPIPE) && last != -int32(syscall.ECONNRESET) {
		t.Fatalf("send to a closed peer: %d, want -EPIPE or -ECONNRESET", last)
	}
}

func TestFull(t *testing.T) {
	r := newRing(t)
	a, _ := sockets(t)
	n := 0
	for r.Send(a, []byte("x"), uint64(n)) {
		n++
	}
	if !r.Full() || n != len(r.sqes) {
		t.Fatalf("queued %d, ring of %d, Full %v", n, len(r.sqes), r.Full())
	}
	got, err := r.Submit()
	if err != nil || len(got) != n {
		t.Fatalf("Submit: %d results, %v", len(got), err)
	}
	if r.Full() {
		t.Fatal("still full after Submit")
	}
}
