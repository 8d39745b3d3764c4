package store

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

const (
	// MaxIdentifierLen is PostgreSQL's limit on an identifier, in bytes
	// (NAMEDATALEN - 1): a longer one is cut.
	MaxIdentifierLen = 63
	// pgmqLongestPrefix is the longest prefix PGMQ puts before a queue's
	// name to name what it makes for the queue: its archive's index,
	// archived_at_idx_NAME (and a partitioned queue's template,
	// template_pgmq_q_NAME), longer than its tables' q_ and a_.
	pgmqLongestPrefix = "archived_at_idx_"
	// MaxPhysicalNameLen is PGMQ's limit on a queue name, suffixes
	// included: what leaves room for its longest prefix within
	// PostgreSQL's identifiers, 63 - 16.
	MaxPhysicalNameLen = MaxIdentifierLen - len(pgmqLongestPrefix)
	// DLQSuffix names a queue's dead-letter queue: orders -> orders_dlq.
	DLQSuffix = "_dlq"
	// MaxQueueNameLen leaves room for the _dlq suffix the engine adds.
	MaxQueueNameLen = MaxPhysicalNameLen - len(DLQSuffix)
)

// queueNameLimit says why a queue pgbus makes has at most
// MaxQueueNameLen characters.
var queueNameLimit = fmt.Sprintf("a queue's name has at most %d, so that its dead-letter queue's, with the suffix %s, fits PGMQ's limit of %d, which keeps the names PGMQ derives from a queue's (up to %s%s) within PostgreSQL's %d-byte identifiers",
	MaxQueueNameLen, DLQSuffix, MaxPhysicalNameLen, pgmqLongestPrefix, "NAME", MaxIdentifierLen)

// physicalNameLimit says why a PGMQ queue, a DLQ or a priority level
// included, has at most MaxPhysicalNameLen characters.
var physicalNameLimit = fmt.Sprintf("PGMQ's queues have at most %d, which keeps the names PGMQ derives from a queue's (up to %s%s) within PostgreSQL's %d-byte identifiers; a queue pgbus creates has at most %d, leaving room for its dead-letter queue's suffix %s",
	MaxPhysicalNameLen, pgmqLongestPrefix, "NAME", MaxIdentifierLen, MaxQueueNameLen, DLQSuffix)

// TooLongToCreate says why no queue of name can be created, when that is
// its length (more than MaxQueueNameLen characters: a name a DLQ or a
// priority level of a queue can have); "" otherwise.
func TooLongToCreate(name string) string {
	if len(name) <= MaxQueueNameLen {
		return ""
	}
	return fmt.Sprintf("it is %d characters, and %s", len(name), queueNameLimit)
}

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
		why := physicalNameLimit
		if maxLen == MaxQueueNameLen {
			why = queueNameLimit
		}
		return invalidf("queue name %q is %d characters; %s", shorten(name), len(name), why)
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
