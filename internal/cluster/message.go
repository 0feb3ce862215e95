package cluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The cluster bus messages of Redis 7.0 (cluster.h: clusterMsg and clusterMsgData), in network
// byte order. Every message starts with a 2256-byte header; the body after it depends on the
// type.
const (
	NameLen   = 40 // a node ID: 40 characters
	ipLen     = 46 // NET_IP_STR_LEN
	HeaderLen = 2256
	gossipLen = 104
	extHdrLen = 8
	// ProtoVersion is the bus protocol's version (CLUSTER_PROTO_VER).
	ProtoVersion = 1

	failLen   = HeaderLen + NameLen
	updateLen = HeaderLen + 8 + NameLen + Slots/8
)

// Offsets of the header's fields.
const (
	offTotlen       = 4
	offVer          = 8
	offPort         = 10
	offType         = 12
	offCount        = 14
	offCurrentEpoch = 16
	offConfigEpoch  = 24
	offOffset       = 32
	offSender       = 40
	offMySlots      = 80
	offSlaveOf      = 2128
	offMyIP         = 2168
	offExtensions   = 2214
	offPPort        = 2246
	offCPort        = 2248
	offFlags        = 2250
	offState        = 2252
	offMFlags       = 2253
)

// A MsgType is a bus message's type.
type MsgType uint16

// The message types of Redis 7.0.
const (
	MsgPing MsgType = iota
	MsgPong
	MsgMeet
	MsgFail
	MsgPublish
	MsgFailoverAuthRequest
	MsgFailoverAuthAck
	MsgUpdate
	MsgMFStart
	MsgModule
	MsgPublishShard
	msgTypes // the number of types
)

var msgTypeNames = [msgTypes]string{"ping", "pong", "meet", "fail", "publish", "auth-req", "auth-ack", "update", "mfstart", "module", "publishshard"}

// String returns the type's name as CLUSTER INFO's statistics show it ("ping", "auth-req").
func (t MsgType) String() string {
	if t < msgTypes {
		return msgTypeNames[t]
	}
	return "unknown"
}

// Message flags (mflags[0]).
const (
	MFlagPaused   = 1 << 0 // the primary is paused for a manual failover
	MFlagForceAck = 1 << 1 // vote even though the primary is up (manual failover)
	MFlagExtData  = 1 << 2 // ping extensions follow the gossip sections
)

// ExtHostname is the one ping extension Redis 7.0 knows: the announced hostname.
const ExtHostname = 0

// A NodeID is a node's name: 40 characters, lower-case hex for names Redis makes.
type NodeID [NameLen]byte

func (id NodeID) String() string { return string(id[:]) }

// IsZero reports whether id is all zero bytes, the "no primary" of a header's slaveof.
func (id NodeID) IsZero() bool { return id == NodeID{} }

// validNodeID reports whether name is a node ID Redis accepts (verifyClusterNodeId): 40
// characters, each a lower-case letter or a digit.
func validNodeID(name []byte) bool {
	if len(name) != NameLen {
		return false
	}
	for _, c := range name {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// An IPField is a NUL-terminated address string in a fixed field of 46 bytes.
type IPField [ipLen]byte

// String returns the field up to its first NUL.
func (f *IPField) String() string {
	if i := bytes.IndexByte(f[:], 0); i >= 0 {
		return string(f[:i])
	}
	return string(f[:])
}

// setIP stores s, cut to 45 bytes, NUL-padded.
func (f *IPField) set(s string) {
	*f = IPField{}
	copy(f[:ipLen-1], s)
}

// A Gossip is one gossip section of a PING, PONG or MEET: what the sender knows of another node.
type Gossip struct {
	Node         NodeID
	PingSent     uint32 // seconds
	PongReceived uint32 // seconds
	IP           IPField
	Port, CPort  uint16
	Flags        uint16
	PPort        uint16
	Unused       uint16
}

// An Extension is one ping extension: its type and its data, padded to eight bytes.
type Extension struct {
	Type   uint16
	Unused uint16
	Data   []byte
}

// A Message is one cluster bus message. The header fields are those of every message; the
// body's fields are those of its type. A decoded Message's byte slices alias the decoded buffer.
type Message struct {
	Type         MsgType
	Port         uint16 // the sender's client port
	CurrentEpoch uint64
	ConfigEpoch  uint64 // the sender's, or its primary's if it is a replica
	Offset       uint64 // replication offset
	Sender       NodeID
	MySlots      SlotBitmap // the sender's slots, or its primary's
	SlaveOf      NodeID     // the sender's primary, zero for a primary
	MyIP         IPField    // the address the sender announces, empty for "use the socket's"
	Reserved     [30]byte   // notused1
	PPort        uint16     // plaintext port when Port is TLS
	CPort        uint16     // bus port
	Flags        uint16     // the sender's node flags
	State        uint8      // the sender's view of the cluster: 0 ok, 1 fail
	MFlags       [3]byte

	// PING, PONG, MEET.
	Gossip     []Gossip
	Extensions []Extension
	// FAIL: the node that failed.
	About NodeID
	// PUBLISH, PUBLISHSHARD.
	Channel, Payload []byte
	// UPDATE: a node's slots under its config epoch.
	UpdateEpoch uint64
	UpdateNode  NodeID
	UpdateSlots SlotBitmap
	// MODULE (Payload holds its data).
	ModuleID   uint64 // in the sender's byte order, as Redis passes it
	ModuleType uint8

	count, extensions uint16 // as decoded
}

// Hostname returns the hostname extension's value, and whether there was one.
func (m *Message) Hostname() (string, bool) {
	for _, e := range m.Extensions {
		if e.Type == ExtHostname {
			if i := bytes.IndexByte(e.Data, 0); i >= 0 {
				return string(e.Data[:i]), true
			}
		}
	}
	return "", false
}

// SetHostname replaces the extensions with a hostname extension, or none if h is "".
func (m *Message) SetHostname(h string) {
	m.Extensions = m.Extensions[:0]
	m.MFlags[0] &^= MFlagExtData
	if h == "" {
		return
	}
	data := make([]byte, (len(h)+1+7)/8*8)
	copy(data, h)
	m.Extensions = append(m.Extensions, Extension{Type: ExtHostname, Data: data})
	m.MFlags[0] |= MFlagExtData
}

// Errors of Decode and ReadFrame. Every error they return wraps ErrMalformed.
var (
	ErrMalformed   = errors.New("cluster: malformed bus message")
	ErrSignature   = fmt.Errorf("%w: bad signature (not \"RCmb\")", ErrMalformed)
	ErrVersion     = fmt.Errorf("%w: unsupported protocol version", ErrMalformed)
	ErrUnknownType = fmt.Errorf("%w: unknown message type", ErrMalformed)
	ErrTooLarge    = fmt.Errorf("%w: message too large", ErrMalformed)
)

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// Len returns the encoded length of m.
func (m *Message) Len() int {
	switch m.Type {
	case MsgPing, MsgPong, MsgMeet:
		n := HeaderLen + gossipLen*len(m.Gossip)
		for _, e := range m.Extensions {
			n += extHdrLen + len(e.Data)
		}
		return n
	case MsgFail:
		return failLen
	case MsgPublish, MsgPublishShard:
		return HeaderLen + 8 + len(m.Channel) + len(m.Payload)
	case MsgUpdate:
		return updateLen
	case MsgModule:
		return HeaderLen + 13 + len(m.Payload)
	}
	return HeaderLen
}

// Append appends m's encoding to b: the header, then the body of m's type. The gossip count,
// the number of extensions and the total length are those of m's slices; an extension's data is
// written as it is, and must be a multiple of eight bytes long for Redis to accept it.
func (m *Message) Append(b []byte) []byte {
	start := len(b)
	n := m.Len()
	b = append(b, make([]byte, n)...)
	p := b[start:]
	be := binary.BigEndian
	copy(p, "RCmb")
	be.PutUint32(p[offTotlen:], uint32(n))
	be.PutUint16(p[offVer:], ProtoVersion)
	be.PutUint16(p[offPort:], m.Port)
	be.PutUint16(p[offType:], uint16(m.Type))
	if m.Type == MsgPing || m.Type == MsgPong || m.Type == MsgMeet {
		be.PutUint16(p[offCount:], uint16(len(m.Gossip)))
		be.PutUint16(p[offExtensions:], uint16(len(m.Extensions)))
	} else {
		// Unused by other types; a decoded message keeps what it had.
		be.PutUint16(p[offCount:], m.count)
		be.PutUint16(p[offExtensions:], m.extensions)
	}
	be.PutUint64(p[offCurrentEpoch:], m.CurrentEpoch)
	be.PutUint64(p[offConfigEpoch:], m.ConfigEpoch)
	be.PutUint64(p[offOffset:], m.Offset)
	copy(p[offSender:], m.Sender[:])
	copy(p[offMySlots:], m.MySlots[:])
	copy(p[offSlaveOf:], m.SlaveOf[:])
	copy(p[offMyIP:], m.MyIP[:])
	copy(p[offExtensions+2:], m.Reserved[:])
	be.PutUint16(p[offPPort:], m.PPort)
	be.PutUint16(p[offCPort:], m.CPort)
	be.PutUint16(p[offFlags:], m.Flags)
	p[offState] = m.State
	copy(p[offMFlags:], m.MFlags[:])
	d := p[HeaderLen:]
	switch m.Type {
	case MsgPing, MsgPong, MsgMeet:
		for i := range m.Gossip {
			g := &m.Gossip[i]
			q := d[i*gossipLen:]
			copy(q, g.Node[:])
			be.PutUint32(q[40:], g.PingSent)
			be.PutUint32(q[44:], g.PongReceived)
			copy(q[48:], g.IP[:])
			be.PutUint16(q[94:], g.Port)
			be.PutUint16(q[96:], g.CPort)
			be.PutUint16(q[98:], g.Flags)
			be.PutUint16(q[100:], g.PPort)
			be.PutUint16(q[102:], g.Unused)
		}
		q := d[len(m.Gossip)*gossipLen:]
		for _, e := range m.Extensions {
			be.PutUint32(q, uint32(extHdrLen+len(e.Data)))
			be.PutUint16(q[4:], e.Type)
			be.PutUint16(q[6:], e.Unused)
			copy(q[extHdrLen:], e.Data)
			q = q[extHdrLen+len(e.Data):]
		}
	case MsgFail:
		copy(d, m.About[:])
	case MsgPublish, MsgPublishShard:
		be.PutUint32(d, uint32(len(m.Channel)))
		be.PutUint32(d[4:], uint32(len(m.Payload)))
		copy(d[8:], m.Channel)
		copy(d[8+len(m.Channel):], m.Payload)
	case MsgUpdate:
		be.PutUint64(d, m.UpdateEpoch)
		copy(d[8:], m.UpdateNode[:])
		copy(d[8+NameLen:], m.UpdateSlots[:])
	case MsgModule:
		binary.NativeEndian.PutUint64(d, m.ModuleID)
		be.PutUint32(d[8:], uint32(len(m.Payload)))
		d[12] = m.ModuleType
		copy(d[13:], m.Payload)
	}
	return b
}

// Decode parses one whole message, checking it as strictly as Redis 7.0 does before it acts
// on one (clusterProcessPacket) and more: the signature, the protocol version, the total length
// against the buffer, and the length the type's body needs (the gossip count, each extension's
// length and padding, a publish's or module message's lengths). A message of a type Redis 7.0
// does not know is reported with ErrUnknownType (Redis ignores such messages). Decode never
// panics and allocates only the gossip and extension slices; m's byte slices alias b.
func Decode(b []byte) (*Message, error) {
	if len(b) < 8 {
		return nil, malformed("%d bytes, shorter than a message's first 8", len(b))
	}
	if string(b[:4]) != "RCmb" {
		return nil, ErrSignature
	}
	be := binary.BigEndian
	totlen := be.Uint32(b[offTotlen:])
	if uint64(totlen) != uint64(len(b)) {
		return nil, malformed("total length field %d but %d bytes", totlen, len(b))
	}
	if len(b) < HeaderLen {
		return nil, malformed("%d bytes, shorter than the %d-byte header", len(b), HeaderLen)
	}
	if v := be.Uint16(b[offVer:]); v != ProtoVersion {
		return nil, fmt.Errorf("%w %d", ErrVersion, v)
	}
	m := &Message{
		Type:         MsgType(be.Uint16(b[offType:])),
		Port:         be.Uint16(b[offPort:]),
		CurrentEpoch: be.Uint64(b[offCurrentEpoch:]),
		ConfigEpoch:  be.Uint64(b[offConfigEpoch:]),
		Offset:       be.Uint64(b[offOffset:]),
		PPort:        be.Uint16(b[offPPort:]),
		CPort:        be.Uint16(b[offCPort:]),
		Flags:        be.Uint16(b[offFlags:]),
		State:        b[offState],
		count:        be.Uint16(b[offCount:]),
		extensions:   be.Uint16(b[offExtensions:]),
	}
	copy(m.Sender[:], b[offSender:])
	copy(m.MySlots[:], b[offMySlots:])
	copy(m.SlaveOf[:], b[offSlaveOf:])
	copy(m.MyIP[:], b[offMyIP:])
	copy(m.Reserved[:], b[offExtensions+2:])
	copy(m.MFlags[:], b[offMFlags:])
	d := b[HeaderLen:]
	want := func(n int) error {
		if len(b) != n {
			return malformed("%s message of %d bytes, expected %d", m.Type, len(b), n)
		}
		return nil
	}
	switch m.Type {
	case MsgPing, MsgPong, MsgMeet:
		gl := int(m.count) * gossipLen
		if gl > len(d) {
			return nil, malformed("%s message of %d bytes cannot hold its %d gossip sections", m.Type, len(b), m.count)
		}
		m.Gossip = make([]Gossip, m.count)
		for i := range m.Gossip {
			q := d[i*gossipLen:]
			g := &m.Gossip[i]
			copy(g.Node[:], q)
			g.PingSent = be.Uint32(q[40:])
			g.PongReceived = be.Uint32(q[44:])
			copy(g.IP[:], q[48:])
			g.Port = be.Uint16(q[94:])
			g.CPort = be.Uint16(q[96:])
			g.Flags = be.Uint16(q[98:])
			g.PPort = be.Uint16(q[100:])
			g.Unused = be.Uint16(q[102:])
		}
		rest := d[gl:]
		if m.MFlags[0]&MFlagExtData == 0 {
			if m.extensions != 0 {
				return nil, malformed("%s message counts %d extensions without the extension flag", m.Type, m.extensions)
			}
			if len(rest) != 0 {
				return nil, malformed("%s message of %d bytes, expected %d for %d gossip sections", m.Type, len(b), HeaderLen+gl, m.count)
			}
			break
		}
		m.Extensions = make([]Extension, 0, min(int(m.extensions), len(rest)/extHdrLen))
		for i := 0; i < int(m.extensions); i++ {
			if len(rest) < extHdrLen {
				return nil, malformed("%s message ends inside extension %d of %d", m.Type, i+1, m.extensions)
			}
			el := be.Uint32(rest)
			if el%8 != 0 || el < extHdrLen {
				return nil, malformed("%s message's extension %d is %d bytes long, not a multiple of 8 of at least 8", m.Type, i+1, el)
			}
			if uint64(el) > uint64(len(rest)) {
				return nil, malformed("%s message's extension %d of %d bytes exceeds the message", m.Type, i+1, el)
			}
			e := Extension{Type: be.Uint16(rest[4:]), Unused: be.Uint16(rest[6:]), Data: rest[extHdrLen:el:el]}
			if e.Type == ExtHostname && bytes.IndexByte(e.Data, 0) < 0 {
				return nil, malformed("%s message's hostname extension is not NUL-terminated", m.Type)
			}
			m.Extensions = append(m.Extensions, e)
			rest = rest[el:]
		}
		if len(rest) != 0 {
			return nil, malformed("%s message has %d bytes after its gossip sections and extensions", m.Type, len(rest))
		}
	case MsgFail:
		if err := want(failLen); err != nil {
			return nil, err
		}
		copy(m.About[:], d)
	case MsgPublish, MsgPublishShard:
		if len(d) < 8 {
			return nil, malformed("%s message of %d bytes, shorter than its lengths", m.Type, len(b))
		}
		cl, pl := uint64(be.Uint32(d)), uint64(be.Uint32(d[4:]))
		if uint64(len(d)) != 8+cl+pl {
			return nil, malformed("%s message of %d bytes, expected %d for a channel of %d and a message of %d bytes", m.Type, len(b), uint64(HeaderLen)+8+cl+pl, cl, pl)
		}
		m.Channel = d[8 : 8+cl : 8+cl]
		m.Payload = d[8+cl:]
	case MsgFailoverAuthRequest, MsgFailoverAuthAck, MsgMFStart:
		if err := want(HeaderLen); err != nil {
			return nil, err
		}
	case MsgUpdate:
		if err := want(updateLen); err != nil {
			return nil, err
		}
		m.UpdateEpoch = be.Uint64(d)
		copy(m.UpdateNode[:], d[8:])
		copy(m.UpdateSlots[:], d[8+NameLen:])
	case MsgModule:
		if len(d) < 13 {
			return nil, malformed("module message of %d bytes, shorter than its header", len(b))
		}
		pl := uint64(be.Uint32(d[8:]))
		if uint64(len(d)) != 13+pl {
			return nil, malformed("module message of %d bytes, expected %d for %d bytes of data", len(b), uint64(HeaderLen)+13+pl, pl)
		}
		m.ModuleID = binary.NativeEndian.Uint64(d)
		m.ModuleType = d[12]
		m.Payload = d[13:]
	default:
		return nil, fmt.Errorf("%w %d", ErrUnknownType, uint16(m.Type))
	}
	return m, nil
}

// MaxMessage is the largest message ReadFrame accepts: a PUBLISH of a 512 MB message (Redis's
// largest string) on a long channel fits.
const MaxMessage = 1<<30 + HeaderLen

// ReadFrame reads one message from r, as Redis's bus reads one (clusterReadHandler): the first 8
// bytes, which must be the signature and a total length of at least the header's, then the rest.
// A message longer than max is refused with ErrTooLarge. The buffer grows only as bytes arrive,
// so a length that lies costs no memory. buf, if large enough, is reused.
func ReadFrame(r io.Reader, buf []byte, max int) ([]byte, error) {
	if cap(buf) < 8 {
		buf = make([]byte, 8, 4096)
	}
	buf = buf[:8]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	if string(buf[:4]) != "RCmb" {
		return nil, ErrSignature
	}
	n := uint64(binary.BigEndian.Uint32(buf[4:]))
	if n < HeaderLen {
		return nil, malformed("total length %d, shorter than the %d-byte header", n, HeaderLen)
	}
	if n > uint64(max) {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrTooLarge, n, max)
	}
	for uint64(len(buf)) < n {
		chunk := min(n-uint64(len(buf)), 1<<20)
		if uint64(cap(buf)-len(buf)) < chunk {
			nb := make([]byte, len(buf), min(n, uint64(2*cap(buf))+chunk))
			copy(nb, buf)
			buf = nb
		}
		k := len(buf)
		buf = buf[:k+int(chunk)]
		if _, err := io.ReadFull(r, buf[k:]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}
