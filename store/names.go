package store

import (
	"strings"

	"github.com/jackc/pgx/v5"
)

const (
	// MaxPhysicalNameLen is PGMQ's limit on a queue name, suffixes included.
	MaxPhysicalNameLen = 47
	// DLQSuffix names a queue's dead-letter queue: orders -> orders_dlq.
	DLQSuffix = "_dlq"
	// MaxQueueNameLen leaves room for the _dlq suffix the engine adds.
	MaxQueueNameLen = MaxPhysicalNameLen - len(DLQSuffix)
)

const nameRule = `must start with a lowercase letter and contain only lowercase letters, digits and underscores (^[a-z][a-z0-9_]*$)`

// ValidateQueueName checks a name given to create a queue: the PGMQ rule, room
// for the _dlq suffix, and not itself a dead-letter queue's name.
func ValidateQueueName(name string) error {
	if err := validateName(name, MaxQueueNameLen); err != nil {
		return err
	}
	if strings.HasSuffix(name, DLQSuffix) {
		return invalidf("queue name %q: names ending in %q are reserved for dead-letter queues; queue %q gets one automatically", name, DLQSuffix, strings.TrimSuffix(name, DLQSuffix))
	}
	return nil
}

// IsLevelName reports whether name has the form of a priority level's
// name, base_p<N>, of a name base a queue can be given and a level N a
// queue can have: longer than such a queue's name by its suffix, and
// still within PGMQ's limit. Whether the queue has that level only the
// database tells (LevelOf).
func IsLevelName(name string) bool {
	base, _, ok := splitLevel(name)
	return ok && ValidateQueueName(base) == nil
}

// ValidatePhysicalName checks the name of any PGMQ queue, a DLQ or priority
// sub-queue included.
func ValidatePhysicalName(name string) error {
	return validateName(name, MaxPhysicalNameLen)
}

// DLQName returns the dead-letter queue of a queue.
func DLQName(queue string) string { return queue + DLQSuffix }

func validateName(name string, maxLen int) error {
	if name == "" {
		return invalidf("queue name is empty; it %s", nameRule)
	}
	if len(name) > maxLen {
		return invalidf("queue name %q is %d characters; at most %d are allowed so that PGMQ's table and index names fit PostgreSQL's limit", shorten(name), len(name), maxLen)
	}
	for i, r := range name {
		lower := r >= 'a' && r <= 'z'
		if lower || (i > 0 && (r == '_' || (r >= '0' && r <= '9'))) {
			continue
		}
		return invalidf("queue name %q %s", shorten(name), nameRule)
	}
	return nil
}

func shorten(s string) string {
	if len(s) <= 60 {
		return s
	}
	return s[:60] + "…"
}

// queueTable and archiveTable quote the PGMQ tables of a validated name.
func queueTable(name string) string   { return pgx.Identifier{"pgmq", "q_" + name}.Sanitize() }
func archiveTable(name string) string { return pgx.Identifier{"pgmq", "a_" + name}.Sanitize() }
