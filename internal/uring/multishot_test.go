//go:build linux

package uring

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

func newWaiting(t *testing.T) *Ring {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	r, err := NewWaiting(8, 64, 4, 16)
	if err != nil {
		t.Skipf("io_uring with multishot receives unavailable here: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// waitFor waits on r until a completion tagged tag arrives, for at most 5 seconds, and returns
// every completion seen meanwhile, in order.
func waitFor(t *testing.T, r *Ring, tag uint64) []Completion {
	t.Helper()
	var all []Completion
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		got, err := r.Wait(100*time.Millisecond, false)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, got...)
		for _, c := range got {
			if c.Tag == tag {
				return all
			}
		}
	}
	t.Fatalf("no completion tagged %d within 5 seconds; saw %v", tag, all)
	return nil
}

// A multishot receive brings each arrival in a provided buffer, more than there are buffers
// once they are released, and ends with a final completion when the peer closes.
func TestRecvMultishot(t *testing.T) {
	r := newWaiting(t)
	a, b := sockets(t)
	if !r.RecvMultishot(b, 1) {
		t.Fatal("queue refused")
	}
	var got []byte
	for i := range 10 {
		msg := []byte{'a' + byte(i), '0' + byte(i)}
		if _, err := syscall.Write(a, msg); err != nil {
			t.Fatal(err)
		}
		for _, c := range waitFor(t, r, 1) {
			if c.Tag != 1 || c.Res <= 0 || !c.More() {
				t.Fatalf("completion %+v", c)
			}
			got = append(got, r.Data(c)...)
			r.Release(c)
		}
	}
	if string(got) != "a0b1c2d3e4f5g6h7i8j9" {
		t.Fatalf("received %q", got)
	}
	syscall.Shutdown(a, syscall.SHUT_WR)
	cs := waitFor(t, r, 1)
	if c := cs[len(cs)-1]; c.Res != 0 || c.More() {
		t.Fatalf("at the peer's end: %+v", c)
	}
}

// A wait ends on a wake-up of a polled descriptor, the way another goroutine wakes a loop.
func TestPollMultishotWakes(t *testing.T) {
	r := newWaiting(t)
	efd, _, errno := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	defer syscall.Close(int(efd))
	r.PollMultishot(int(efd), 7)
	if got, err := r.Wait(20*time.Millisecond, true); err != nil || len(got) != 0 {
		t.Fatalf("before any wake-up: %v, %v", got, err)
	}
	for range 3 {
		go func() {
			time.Sleep(10 * time.Millisecond)
			one := [8]byte{1}
			syscall.Write(int(efd), one[:])
		}()
		cs := waitFor(t, r, 7)
		if c := cs[len(cs)-1]; !c.More() {
			t.Fatalf("the multishot poll ended: %+v", c)
		}
		var buf [8]byte
		syscall.Read(int(efd), buf[:])
	}
}

// Cancelling a multishot receive ends it with a final completion; a send completes during
// the Wait that submits it, without counting as the completion waited for.
func TestCancelAndSend(t *testing.T) {
	r := newWaiting(t)
	a, b := sockets(t)
	r.RecvMultishot(b, 1)
	r.Send(a, []byte("hello"), 2)
	cs := waitFor(t, r, 1)
	var sent, recvd bool
	for _, c := range cs {
		switch c.Tag {
		case 2:
			sent = c.Res == 5
		case 1:
			recvd = string(r.Data(c)) == "hello"
			r.Release(c)
		}
	}
	if !sent || !recvd {
		t.Fatalf("completions %+v", cs)
	}
	r.Cancel(1, 3)
	cs = waitFor(t, r, 1)
	if c := cs[len(cs)-1]; c.Res != -int32(syscall.ECANCELED) || c.More() {
		t.Fatalf("cancelled: %+v", c)
	}
	// Nothing is left to cancel: the cancellation's own completion says so.
	r.Cancel(1, 3)
	cs = waitFor(t, r, 3)
	if c := cs[len(cs)-1]; c.Res != -int32(syscall.ENOENT) {
		t.Fatalf("cancelling nothing: %+v", c)
	}
}

// Receives beyond the provided buffers end the multishot receive with -ENOBUFS until buffers
// are released; none of the bytes is lost.
func TestRecvOutOfBuffers(t *testing.T) {
	r := newWaiting(t) // 4 buffers of 16 bytes
	a, b := sockets(t)
	r.RecvMultishot(b, 1)
	msg := make([]byte, 100)
	for i := range msg {
		msg[i] = byte(i)
	}
	if _, err := syscall.Write(a, msg); err != nil {
		t.Fatal(err)
	}
	var got []byte
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < len(msg) && time.Now().Before(deadline) {
		cs, err := r.Wait(50*time.Millisecond, false)
		if err != nil {
			t.Fatal(err)
		}
		rearm := false
		var held []Completion
		for _, c := range cs {
			got = append(got, r.Data(c)...)
			held = append(held, c)
			if !c.More() {
				if c.Res < 0 && c.Res != -int32(syscall.ENOBUFS) {
					t.Fatalf("receive failed: %d", c.Res)
				}
				rearm = true
			}
		}
		for _, c := range held {
			r.Release(c)
		}
		if rearm {
			r.RecvMultishot(b, 1)
		}
	}
	if string(got) != string(msg) {
		t.Fatalf("received %d bytes: %v", len(got), got)
	}
}
