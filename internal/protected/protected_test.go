package protected

import (
	"net"
	"slices"
	"testing"
)

func TestRefuse(t *testing.T) {
	tcp := func(s string) net.Addr { a, _ := net.ResolveTCPAddr("tcp", s); return a }
	for _, tc := range []struct {
		addr          net.Addr
		on, pass, out bool
	}{
		{tcp("127.0.0.1:5000"), true, false, false},
		{tcp("127.9.9.9:5000"), true, false, false},
		{tcp("[::1]:5000"), true, false, false},
		{tcp("[::ffff:127.0.0.1]:5000"), true, false, false},
		{tcp("203.0.113.7:5000"), true, false, true},
		{tcp("[2001:db8::1]:5000"), true, false, true},
		{tcp("[::ffff:203.0.113.7]:5000"), true, false, true},
		{tcp("203.0.113.7:5000"), true, true, false},   // a password is set
		{tcp("203.0.113.7:5000"), false, false, false}, // protected-mode no
		{&net.UnixAddr{Name: "/tmp/s", Net: "unix"}, true, false, false},
		{nil, true, false, false},
	} {
		if got := Refuse(tc.addr, tc.on, tc.pass); got != tc.out {
			t.Errorf("Refuse(%v, on=%v, password=%v) = %v", tc.addr, tc.on, tc.pass, got)
		}
	}
}

func TestExposed(t *testing.T) {
	got := Exposed([]string{"127.0.0.1", "-::1", "localhost", "0.0.0.0", "*", "-::*", "10.1.2.3", "::ffff:127.0.0.1"})
	if want := []string{"0.0.0.0", "*", "-::*", "10.1.2.3"}; !slices.Equal(got, want) {
		t.Fatalf("Exposed = %q, want %q", got, want)
	}
}

func TestDeniedIsOneLine(t *testing.T) {
	if Denied[0] != '-' || Denied[len(Denied)-2:] != "\r\n" || slices.Contains([]byte(Denied[:len(Denied)-2]), '\n') {
		t.Fatal("Denied is not one RESP error line")
	}
}
