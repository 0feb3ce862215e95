// Package metrics keeps bloomd's statistics once, for every reader: INFO (commandstats,
// errorstats, latencystats), SLOWLOG, LATENCY and the Prometheus endpoint all read the same
// counters.
//
// The hot path pays little: a connection adds up its calls and their time per command in its
// own memory and publishes the sums with two atomic adds when the command changes or its batch
// ends (Command.Add); each call's duration goes into a lock-free log-linear histogram with one
// atomic add (Histogram.Observe). Errors, slow commands and latency spikes are rare and take a
// mutex.
//
// Collector turns a Source (the server's numbers, its commands and a capped selection of
// filters) into Prometheus metrics when it is scraped; nothing is observed through
// client_golang on the hot path, so a scrape costs the server no more than an INFO.
//
// Every type here is safe for concurrent use unless its comment says otherwise.
package metrics
