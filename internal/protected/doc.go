// Package protected is bloomd's protected mode, Redis's guard against a server left open to the
// network: while it is on and no password is set, only clients on the loopback interface are
// served; any other client is sent Redis's -DENIED error and disconnected at once. Setting a
// password, or turning protected mode off, lets every client in.
package protected
