package pubsub

import (
	"slices"
	"sync"

	"github.com/bloomd/bloom/internal/resp"
)

// A Subscriber receives published messages.
type Subscriber interface {
	// Proto returns the connection's protocol (2 or 3), which selects the frame's form.
	Proto() int
	// Push queues frame for the client. self reports that the publisher is this subscriber's
	// own connection (RESP3 allows that), which may then write it before the reply of
	// PUBLISH, as Redis does. Push must not block and must not call back into the Hub; frame
	// is valid only during the call.
	Push(frame []byte, self bool)
}

// A Hub routes published messages to subscribers. The zero Hub is not usable; call New.
type Hub struct {
	match func(pattern, s []byte) bool

	mu       sync.RWMutex
	channels map[string]map[*Client]struct{}
	patterns map[string]map[*Client]struct{}
}

// New returns an empty Hub that matches patterns with match(pattern, channel).
func New(match func(pattern, s []byte) bool) *Hub {
	return &Hub{match: match, channels: map[string]map[*Client]struct{}{}, patterns: map[string]map[*Client]struct{}{}}
}

// A Client is one connection's subscriptions. Make it with Hub.NewClient; call Close when the
// connection ends.
type Client struct {
	hub      *Hub
	sub      Subscriber
	channels map[string]struct{}
	patterns map[string]struct{}
}

// NewClient returns the subscription state of a connection whose messages go to sub.
func (h *Hub) NewClient(sub Subscriber) *Client {
	return &Client{hub: h, sub: sub, channels: map[string]struct{}{}, patterns: map[string]struct{}{}}
}

// Subscriber returns the subscriber the client was made for.
func (cl *Client) Subscriber() Subscriber { return cl.sub }

// Each calls fn for every subscription of every client (pattern is set for a PSUBSCRIBE
// pattern), under the hub's read lock: fn must not subscribe or publish.
func (h *Hub) Each(fn func(cl *Client, name string, pattern bool)) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for name, set := range h.channels {
		for cl := range set {
			fn(cl, name, false)
		}
	}
	for name, set := range h.patterns {
		for cl := range set {
			fn(cl, name, true)
		}
	}
}

// Count returns the number of channels and patterns the client is subscribed to. A client
// with a non-zero count is in Redis's "subscribed" state.
func (cl *Client) Count() int { return len(cl.channels) + len(cl.patterns) }

// Channels returns the number of channels and of patterns the client is subscribed to.
func (cl *Client) Channels() (channels, patterns int) { return len(cl.channels), len(cl.patterns) }

// appendHeader appends the header of a 3-element subscription reply or message: an array in
// RESP2, a push in RESP3.
func appendHeader(b []byte, proto, n int) []byte {
	if proto >= 3 {
		return append(b, '>', byte('0'+n), '\r', '\n') // n < 10
	}
	return resp.AppendArrayLen(b, n)
}

func (cl *Client) reply(b []byte, kind string, name []byte) []byte {
	b = appendHeader(b, cl.sub.Proto(), 3)
	b = resp.AppendBulkString(b, kind)
	if name == nil {
		if cl.sub.Proto() >= 3 {
			b = resp.AppendNull(b)
		} else {
			b = resp.AppendNullBulk(b)
		}
	} else {
		b = resp.AppendBulk(b, name)
	}
	return resp.AppendInt(b, int64(cl.Count()))
}

// Subscribe subscribes to each channel and appends Redis's replies to b: one
// ["subscribe", channel, count] per channel.
func (cl *Client) Subscribe(b []byte, channels [][]byte) []byte {
	return cl.change(b, channels, "subscribe", false, true)
}

// PSubscribe subscribes to each pattern, as Subscribe does.
func (cl *Client) PSubscribe(b []byte, patterns [][]byte) []byte {
	return cl.change(b, patterns, "psubscribe", true, true)
}

// Unsubscribe unsubscribes from each channel, or from all when none is given, and appends
// Redis's replies; with no subscriptions and no channel given, one ["unsubscribe", nil, 0].
func (cl *Client) Unsubscribe(b []byte, channels [][]byte) []byte {
	return cl.change(b, channels, "unsubscribe", false, false)
}

// PUnsubscribe is Unsubscribe for patterns.
func (cl *Client) PUnsubscribe(b []byte, patterns [][]byte) []byte {
	return cl.change(b, patterns, "punsubscribe", true, false)
}

func (cl *Client) change(b []byte, names [][]byte, kind string, pattern, on bool) []byte {
	mine, table := cl.channels, cl.hub.channels
	if pattern {
		mine, table = cl.patterns, cl.hub.patterns
	}
	if !on && len(names) == 0 {
		for n := range mine {
			names = append(names, []byte(n))
		}
		slices.SortFunc(names, func(a, b []byte) int { return slices.Compare(a, b) })
		if len(names) == 0 {
			return cl.reply(b, kind, nil)
		}
	}
	h := cl.hub
	for _, name := range names {
		key := string(name)
		_, have := mine[key]
		switch {
		case on && !have:
			h.mu.Lock()
			set := table[key]
			if set == nil {
				set = map[*Client]struct{}{}
				table[key] = set
			}
			set[cl] = struct{}{}
			h.mu.Unlock()
			mine[key] = struct{}{}
		case !on && have:
			h.mu.Lock()
			if set := table[key]; set != nil {
				delete(set, cl)
				if len(set) == 0 {
					delete(table, key)
				}
			}
			h.mu.Unlock()
			delete(mine, key)
		}
		b = cl.reply(b, kind, name)
	}
	return b
}

// Close removes every subscription of the client, without replies.
func (cl *Client) Close() {
	h := cl.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	for n := range cl.channels {
		if set := h.channels[n]; set != nil {
			delete(set, cl)
			if len(set) == 0 {
				delete(h.channels, n)
			}
		}
	}
	for n := range cl.patterns {
		if set := h.patterns[n]; set != nil {
			delete(set, cl)
			if len(set) == 0 {
				delete(h.patterns, n)
			}
		}
	}
	clear(cl.channels)
	clear(cl.patterns)
}

// Publish sends message on channel to every subscriber of the channel and of every matching
// pattern, and returns how many received it (a client subscribed both ways counts twice, as in
// Redis). from is the publishing connection's Subscriber, or nil.
func (h *Hub) Publish(channel, message []byte, from Subscriber) int {
	var frames [2][]byte // by protocol: RESP2, RESP3
	frame := func(proto int) []byte {
		i := 0
		if proto >= 3 {
			i = 1
		}
		if frames[i] == nil {
			b := appendHeader(nil, proto, 3)
			b = resp.AppendBulkString(b, "message")
			b = resp.AppendBulk(b, channel)
			frames[i] = resp.AppendBulk(b, message)
		}
		return frames[i]
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for cl := range h.channels[string(channel)] {
		cl.sub.Push(frame(cl.sub.Proto()), cl.sub == from)
		n++
	}
	for pat, set := range h.patterns {
		if !h.match([]byte(pat), channel) {
			continue
		}
		for cl := range set {
			p := cl.sub.Proto()
			b := appendHeader(nil, p, 4)
			b = resp.AppendBulkString(b, "pmessage")
			b = resp.AppendBulkString(b, pat)
			b = resp.AppendBulk(b, channel)
			b = resp.AppendBulk(b, message)
			cl.sub.Push(b, cl.sub == from)
			n++
		}
	}
	return n
}

// Channels returns the active channels (with at least one subscriber) matching pattern, or
// all of them when pattern is nil: PUBSUB CHANNELS.
func (h *Hub) Channels(pattern []byte) []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []string
	for n := range h.channels {
		if pattern == nil || h.match(pattern, []byte(n)) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// NumSub returns the number of subscribers of channel: PUBSUB NUMSUB.
func (h *Hub) NumSub(channel []byte) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.channels[string(channel)])
}

// NumPat returns the number of patterns subscribed to by any client: PUBSUB NUMPAT.
func (h *Hub) NumPat() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.patterns)
}
