package cluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// golden returns the messages recorded from redis-server 7.0 (testdata/bus), by file name.
func golden(tb testing.TB) map[string][]byte {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "bus", "*.bin"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no recorded messages in testdata/bus: %v", err)
	}
	m := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		m[filepath.Base(f)] = b
	}
	return m
}

// TestGoldenMessages decodes every message recorded from real Redis 7.0 nodes and encodes it
// again: the bytes must be the same, so the codec is bit-compatible with Redis's layout.
func TestGoldenMessages(t *testing.T) {
	types := map[MsgType]int{}
	for name, b := range golden(t) {
		m, err := Decode(b)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		types[m.Type]++
		if !strings.HasPrefix(name, m.Type.String()+"-") {
			t.Errorf("%s decoded as a %s message", name, m.Type)
		}
		if got := m.Append(nil); !bytes.Equal(got, b) {
			i := 0
			for i < len(got) && i < len(b) && got[i] == b[i] {
				i++
			}
			t.Errorf("%s: encoding differs from Redis's at byte %d (%d bytes, Redis %d)", name, i, len(got), len(b))
		}
		if m.Len() != len(b) {
			t.Errorf("%s: Len %d, message %d bytes", name, m.Len(), len(b))
		}
		if !validNodeID(m.Sender[:]) {
			t.Errorf("%s: sender %q is not a node ID", name, m.Sender)
		}
		switch m.Type {
		case MsgPing, MsgPong, MsgMeet:
			for _, g := range m.Gossip {
				if !validNodeID(g.Node[:]) || g.IP.String() != "127.0.0.1" {
					t.Errorf("%s: gossip about %q at %q", name, g.Node, g.IP.String())
				}
			}
			h, ok := m.Hostname()
			if ext := strings.Contains(name, "-ext"); ok != ext || ext && h != "replica-of-first.example" {
				t.Errorf("%s: hostname %q, %v", name, h, ok)
			}
		case MsgFail:
			if !validNodeID(m.About[:]) {
				t.Errorf("%s: FAIL about %q", name, m.About)
			}
		case MsgPublish:
			if string(m.Channel) != "news" || string(m.Payload) != "hello from a node" {
				t.Errorf("%s: published %q on %q", name, m.Payload, m.Channel)
			}
		case MsgPublishShard:
			if string(m.Channel) != "{b}shard" || string(m.Payload) != "to the shard" {
				t.Errorf("%s: published %q on %q", name, m.Payload, m.Channel)
			}
		case MsgUpdate:
			if !validNodeID(m.UpdateNode[:]) || m.UpdateEpoch == 0 || !m.UpdateSlots.Has(0) {
				t.Errorf("%s: UPDATE about %q epoch %d", name, m.UpdateNode, m.UpdateEpoch)
			}
		}
		if strings.Contains(name, "mflags1") && m.MFlags[0]&MFlagPaused == 0 {
			t.Errorf("%s: the paused flag is missing", name)
		}
		if strings.Contains(name, "mflags2") && m.MFlags[0]&MFlagForceAck == 0 {
			t.Errorf("%s: the force-ack flag is missing", name)
		}
	}
	for _, typ := range []MsgType{MsgPing, MsgPong, MsgMeet, MsgFail, MsgPublish, MsgFailoverAuthRequest, MsgFailoverAuthAck, MsgUpdate, MsgMFStart, MsgPublishShard} {
		if types[typ] == 0 {
			t.Errorf("no recorded %s message", typ)
		}
	}
}

// TestHeaderOffsets pins the header's layout to the offsets Redis 7.0 asserts in cluster.h.
func TestHeaderOffsets(t *testing.T) {
	m := &Message{Type: MsgPong, Port: 0x0102, CurrentEpoch: 0x1112131415161718, ConfigEpoch: 0x2122232425262728, Offset: 0x3132333435363738,
		PPort: 0x4142, CPort: 0x5152, Flags: 0x6162, State: 0x71, MFlags: [3]byte{0x81, 0x82, 0x83}}
	copy(m.Sender[:], strings.Repeat("s", NameLen))
	copy(m.SlaveOf[:], strings.Repeat("p", NameLen))
	m.MyIP.set("10.1.2.3")
	m.MySlots.Set(0)
	m.MySlots.Set(Slots - 1)
	b := m.Append(nil)
	be := binary.BigEndian
	checks := []struct {
		name string
		got  uint64
		want uint64
	}{
		{"totlen@4", uint64(be.Uint32(b[4:])), HeaderLen},
		{"ver@8", uint64(be.Uint16(b[8:])), 1},
		{"port@10", uint64(be.Uint16(b[10:])), 0x0102},
		{"type@12", uint64(be.Uint16(b[12:])), uint64(MsgPong)},
		{"currentEpoch@16", be.Uint64(b[16:]), 0x1112131415161718},
		{"configEpoch@24", be.Uint64(b[24:]), 0x2122232425262728},
		{"offset@32", be.Uint64(b[32:]), 0x3132333435363738},
		{"myslots@80", uint64(b[80]), 1},
		{"myslots end@2127", uint64(b[2127]), 0x80},
		{"pport@2246", uint64(be.Uint16(b[2246:])), 0x4142},
		{"cport@2248", uint64(be.Uint16(b[2248:])), 0x5152},
		{"flags@2250", uint64(be.Uint16(b[2250:])), 0x6162},
		{"state@2252", uint64(b[2252]), 0x71},
		{"mflags@2253", uint64(b[2253]), 0x81},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
	if string(b[:4]) != "RCmb" || string(b[40:80]) != m.Sender.String() || string(b[2128:2168]) != m.SlaveOf.String() || string(b[2168:2176]) != "10.1.2.3" {
		t.Errorf("signature, sender, slaveof or myip misplaced")
	}
}

func TestRoundTrip(t *testing.T) {
	base := func(typ MsgType) *Message {
		m := &Message{Type: typ, Port: 7000, CPort: 17000, CurrentEpoch: 9, ConfigEpoch: 3, Offset: 12345, Flags: FlagMaster}
		copy(m.Sender[:], strings.Repeat("a", NameLen))
		return m
	}
	var ms []*Message
	p := base(MsgPing)
	g := Gossip{Port: 7001, CPort: 17001, Flags: FlagSlave, PingSent: 5, PongReceived: 6}
	copy(g.Node[:], strings.Repeat("b", NameLen))
	g.IP.set("::1")
	p.Gossip = []Gossip{g, g}
	p.SetHostname("host-1.example")
	ms = append(ms, p)
	f := base(MsgFail)
	copy(f.About[:], strings.Repeat("c", NameLen))
	ms = append(ms, f)
	pub := base(MsgPublish)
	pub.Channel, pub.Payload = []byte("ch"), []byte("payload")
	ms = append(ms, pub)
	u := base(MsgUpdate)
	u.UpdateEpoch = 77
	u.UpdateSlots.Set(100)
	ms = append(ms, u)
	mod := base(MsgModule)
	mod.ModuleID, mod.ModuleType, mod.Payload = 0x0102030405060708, 3, []byte("mod")
	ms = append(ms, mod, base(MsgFailoverAuthRequest), base(MsgFailoverAuthAck), base(MsgMFStart), base(MsgPublishShard))
	for _, m := range ms {
		b := m.Append(nil)
		d, err := Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", m.Type, err)
		}
		if again := d.Append(nil); !bytes.Equal(again, b) {
			t.Errorf("%s: not the same bytes after a round trip", m.Type)
		}
	}
	d, _ := Decode(ms[0].Append(nil))
	if h, ok := d.Hostname(); !ok || h != "host-1.example" || len(d.Gossip) != 2 || d.Gossip[1].IP.String() != "::1" {
		t.Errorf("ping decoded as %+v, hostname %q", d.Gossip, h)
	}
}

// TestDecodeRejects checks that damaged messages are refused with an error naming the fault.
func TestDecodeRejects(t *testing.T) {
	ping := golden(t)["ping-gossip2-ext-1.bin"]
	if ping == nil {
		t.Fatal("no recorded ping with gossip and an extension")
	}
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), ping...)) }
	set16 := func(off int, v uint16) []byte {
		return mutate(func(b []byte) []byte { binary.BigEndian.PutUint16(b[off:], v); return b })
	}
	set32 := func(off int, v uint32) []byte {
		return mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[off:], v); return b })
	}
	gossipEnd := HeaderLen + 2*gossipLen
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "shorter than a message's first 8"},
		{"signature", mutate(func(b []byte) []byte { b[0] = 'X'; return b }), "signature"},
		{"version", set16(offVer, 2), "protocol version"},
		{"totlen larger", set32(offTotlen, uint32(len(ping)+1)), "total length field"},
		{"truncated", ping[:len(ping)-1], "total length field"},
		{"header only", mutate(func(b []byte) []byte { b = b[:100]; binary.BigEndian.PutUint32(b[4:], 100); return b }), "shorter than the 2256-byte header"},
		{"gossip count", set16(offCount, 1000), "cannot hold its 1000 gossip sections"},
		{"fewer gossip", set16(offCount, 1), "extension 1"},
		{"extensions without flag", mutate(func(b []byte) []byte { b[offMFlags] = 0; return b }), "without the extension flag"},
		{"extension count", set16(offExtensions, 2), "ends inside extension 2"},
		{"extension padding", set32(gossipEnd, 12), "not a multiple of 8"},
		{"extension zero length", set32(gossipEnd, 0), "not a multiple of 8 of at least 8"},
		{"extension too long", set32(gossipEnd, 1<<30), "exceeds the message"},
		{"hostname unterminated", mutate(func(b []byte) []byte {
			for i := gossipEnd + extHdrLen; i < len(b); i++ {
				b[i] = 'x'
			}
			return b
		}), "not NUL-terminated"},
		{"unknown type", set16(offType, 42), "unknown message type 42"},
		{"fail length", set16(offType, uint16(MsgFail)), "fail message of"},
		{"update length", set16(offType, uint16(MsgUpdate)), "update message of"},
		{"auth length", set16(offType, uint16(MsgFailoverAuthRequest)), "auth-req message of"},
		{"publish lengths", mutate(func(b []byte) []byte {
			binary.BigEndian.PutUint16(b[offType:], uint16(MsgPublish))
			binary.BigEndian.PutUint32(b[HeaderLen:], 0xffffffff)
			return b
		}), "publish message of"},
		{"module lengths", mutate(func(b []byte) []byte {
			binary.BigEndian.PutUint16(b[offType:], uint16(MsgModule))
			binary.BigEndian.PutUint32(b[HeaderLen+8:], 0xfffffff0)
			return b
		}), "module message of"},
	}
	for _, c := range cases {
		m, err := Decode(c.b)
		if err == nil {
			t.Errorf("%s: decoded %v", c.name, m.Type)
			continue
		}
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an ErrMalformed saying %q", c.name, err, c.want)
		}
	}
}

func TestReadFrame(t *testing.T) {
	g := golden(t)
	var stream []byte
	var want [][]byte
	for _, name := range []string{"ping-gossip2-1.bin", "publish-1.bin", "update-1.bin"} {
		stream = append(stream, g[name]...)
		want = append(want, g[name])
	}
	r := bytes.NewReader(stream)
	var buf []byte
	for i, w := range want {
		f, err := ReadFrame(r, buf, MaxMessage)
		if err != nil || !bytes.Equal(f, w) {
			t.Fatalf("frame %d: %v", i, err)
		}
		buf = f[:0]
	}
	if _, err := ReadFrame(r, buf, MaxMessage); err != io.EOF {
		t.Errorf("after the last frame: %v, want EOF", err)
	}
	// A length that lies: the reader fails at the end of the data, having held no more than
	// what arrived.
	lie := append([]byte("RCmb\x7f\xff\xff\xff"), make([]byte, 5000)...)
	if _, err := ReadFrame(bytes.NewReader(lie), nil, MaxMessage); !errors.Is(err, ErrTooLarge) {
		t.Errorf("2 GB length: %v, want ErrTooLarge", err)
	}
	lie = append([]byte("RCmb\x00\x10\x00\x00"), make([]byte, 5000)...)
	if _, err := ReadFrame(bytes.NewReader(lie), nil, MaxMessage); err != io.ErrUnexpectedEOF {
		t.Errorf("1 MB length, 5000 bytes: %v, want ErrUnexpectedEOF", err)
	}
	for _, bad := range []string{"GET / HTTP/1.1\r\n", "RCmb\x00\x00\x00\x10"} {
		if _, err := ReadFrame(strings.NewReader(bad), nil, MaxMessage); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v, want ErrMalformed", bad, err)
		}
	}
}

// FuzzDecode feeds Decode arbitrary bytes (seeded with Redis's recorded messages): it must
// return a message or an ErrMalformed, never panic, and a message it accepts must encode back
// to the same bytes.
func FuzzDecode(f *testing.F) {
	for _, b := range golden(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// Let the fuzzer reach the bodies: make the signature, version and length right half
		// of the time.
		for _, fix := range []bool{false, true} {
			in := b
			if fix && len(b) >= 16 {
				in = append([]byte(nil), b...)
				copy(in, "RCmb")
				binary.BigEndian.PutUint32(in[4:], uint32(len(in)))
				binary.BigEndian.PutUint16(in[8:], ProtoVersion)
			}
			m, err := Decode(in)
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("error %v does not wrap ErrMalformed", err)
				}
				continue
			}
			if out := m.Append(nil); !bytes.Equal(out, in) {
				t.Fatalf("%s message re-encodes differently", m.Type)
			}
		}
	})
}
