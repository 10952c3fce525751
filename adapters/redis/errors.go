package redis

import (
	"errors"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// unavailablePrefixes are server error replies that mean "the service cannot serve this
// now" rather than "the service refused this request": the dataset is loading, a script
// blocks the server, the replica lost its primary, the cluster is down, or our credentials
// were refused (the service is unusable for this adapter until an operator fixes them).
// READONLY is a write that reached a replica (a primary demoted by a failover, before the
// client learns of the new one) and NOREPLICAS a primary refusing writes under its own
// min-replicas-to-write: both pass once the replicas are back in order.
var unavailablePrefixes = []string{
	"LOADING", "BUSY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "NOAUTH", "WRONGPASS",
	"NOPERM", "READONLY", "NOREPLICAS",
}

// classify maps a go-redis failure to the contract's stable errors, keeping the native cause
// chained. A server reply error is the service rejecting the request (MemoryAdapterError)
// unless it is one of unavailablePrefixes; anything else (refused or reset connections,
// timeouts, a closed client, a cancelled context) is MemoryAdapterUnavailable.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var me *memory.MemoryAdapterError
	var mu *memory.MemoryAdapterUnavailable
	if errors.As(err, &mu) {
		return err
	}
	if !errors.Is(err, memory.ErrUnavailable) && errors.As(err, &me) {
		return err
	}
	if isServerReply(err) && !isUnavailableReply(err) {
		return memory.NewAdapterError(op+": the server rejected the request", err)
	}
	return memory.NewUnavailable(op, err)
}

func isServerReply(err error) bool {
	var rerr goredis.Error
	return errors.As(err, &rerr)
}

func isUnavailableReply(err error) bool {
	msg := err.Error()
	for _, p := range unavailablePrefixes {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// isWrongType reports the server's WRONGTYPE reply: the key holds another data type, which
// for an item identity means a foreign (non-memory) record.
func isWrongType(err error) bool {
	return isServerReply(err) && strings.HasPrefix(err.Error(), "WRONGTYPE")
}

// retryable reports whether a read may be repeated: transport failures only. A server reply
// will not change by asking again at once.
func retryable(err error) bool {
	if err == nil || errors.Is(err, memory.ErrAdapter) {
		return false
	}
	return (!isServerReply(err) || isUnavailableReply(err)) && !errors.Is(err, goredis.ErrClosed)
}
