// Package pubsub is bloomd's publish/subscribe hub: Redis's SUBSCRIBE, PSUBSCRIBE, PUBLISH and
// PUBSUB, with the message frames Redis sends (a RESP2 array, or a RESP3 push). Redis Sentinel
// needs it: Sentinels find each other only through the "__sentinel__:hello" channel of the
// servers they watch.
//
// A Hub maps channels and patterns to Subscribers. A Subscriber is whatever can take a frame of
// bytes and write it to its client later (a connection of the server); the hub never blocks on
// a slow client, since Push only queues. A Client holds one connection's subscriptions and
// writes the replies of the subscription commands (which are ordinary replies to the caller, not
// pushes through Push).
//
// Pattern matching is the caller's (the server's glob, as KEYS uses), passed to New.
//
// Keyspace notifications (notify.go) are Redis 7.0's: Classes is notify-keyspace-events' set of
// class letters (parsed and printed as Redis's notify.c does), and Hub.Notify publishes one event
// on "__keyspace@0__:<key>" and "__keyevent@0__:<event>" as the classes ask. The server decides
// which commands publish which events (internal/server's notify.go); its transcripts
// (notify-events.txt, TestNotifyTranscripts) compare them with redis-server 7.0.15's.
//
// A Hub is safe for concurrent use; a Client is used by its connection's goroutine only, except
// that Publish (from any goroutine) reads the hub's tables under the hub's lock.
package pubsub
