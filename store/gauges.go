package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// QueueDepth is how many messages one logical queue holds in each state,
// and its DLQ's depth: what a metrics scrape reads, cheaply. Unlike
// QueueStats it reads no archive and no per-minute counters.
type QueueDepth struct {
	Queue string
	// Visible + InFlight + WaitingRetry + Scheduled is the queue's depth,
	// split as QueueStats splits it.
	Visible      int64
	InFlight     int64
	WaitingRetry int64
	Scheduled    int64
	// OldestVisibleAgeSeconds is how long the message ready longest has
	// been ready: since it was sent, or since its delay, retry backoff or
	// visibility timeout ended; 0 when none is ready. A message sent with
	// a delay has not waited for a worker while the delay ran.
	OldestVisibleAgeSeconds float64
	// OldestVisibleLevel is the priority level of that message, for a
	// queue with levels; 0 otherwise.
	OldestVisibleLevel int
	// OldestAgeSeconds is how long the oldest message of the queue has
	// been in it; 0 when it is empty.
	OldestAgeSeconds float64
	// DLQDepth is the number of messages in the queue's DLQ, from its
	// groups' counts where they are kept (no scan of the DLQ).
	DLQDepth int64
	// Dropped is true for a queue whose tables are gone while its DLQ
	// holds messages (see QueueStats.Dropped): only DLQDepth is read.
	Dropped bool
	// Priorities is the number of the queue's priority levels, 0 for a
	// queue without.
	Priorities int
	// Estimated is true when a table of the queue held more rows, or took
	// more pages, than the store counts at each read (ExactCountLimit,
	// ExactCountPages): Visible is then the
	// statistics system's estimate less the rest, which, with the ages, is
	// read exactly through the queue's vt index.
	Estimated bool

	// archived and totalSent are read only for QueueStats (see depthRead):
	// QueueStats.Archived and TotalSent; archivedEstimated says archived
	// is an estimate, the archive holding more than ExactCountLimit rows.
	archived, totalSent int64
	archivedEstimated   bool
}

// QueueDepths returns the depth of every work queue, and of every queue
// dropped with messages left in its DLQ (Dropped), by name. It reads each
// live queue table that has a block once (they hold the backlog, not the
// history; one without a block is empty, found by its size) and each
// DLQ's group counts. The tables are read depthChunk to a statement (a
// partitioned one alone), so that a scrape of a database of many queues
// makes few round trips while holding the locks of few tables at a time.
func (s *Store) QueueDepths(ctx context.Context) ([]QueueDepth, error) {
	depths, _, err := s.depthsOf(ctx, depthRead{})
	return depths, err
}

// depthRead selects what depthsOf reads besides the depths, in the same
// statements, and of which queues.
type depthRead struct {
	archive bool   // count each queue's archive
	sent    bool   // read how many messages were sent to each queue since it was created
	only    string // this queue's alone, when set
	// onlyDLQ is the DLQ of only when that is not DLQName(only): the DLQ
	// of the queue only is a priority level of, which its messages die in.
	onlyDLQ string
}

// dlqOf names the DLQ read for queue q.
func (rd depthRead) dlqOf(q string) string {
	if rd.onlyDLQ != "" && q == rd.only {
		return rd.onlyDLQ
	}
	return DLQName(q)
}

// depthsOf is QueueDepths, with what rd selects, and whether a table went
// during the read, its queue being left out. A queue asked for alone is
// read by its name: a logical queue, with its levels, or the physical
// queue of that name (a priority level's); it is dropped when its tables
// are gone and its DLQ holds messages.
func (s *Store) depthsOf(ctx context.Context, rd depthRead) ([]QueueDepth, bool, error) {
	queues, work, levels, err := s.queuesToRead(ctx, rd.only)
	if err != nil {
		return nil, false, err
	}
	var tables []string
	for i, q := range queues {
		if i < work { // a dropped queue has only its DLQ
			tables = append(tables, physicalNames(q, levels[q])...)
		}
		tables = append(tables, rd.dlqOf(q))
	}
	states, err := s.tableStates(ctx, tables, rd.sent)
	if err != nil {
		return nil, false, err
	}
	out := make([]QueueDepth, len(queues))
	// missing counts the tables of each queue that were gone before the
	// read; gone marks a queue one of whose tables went during it.
	missing, gone := map[int]int{}, map[int]bool{}
	var arms, alone []depthArm
	add := func(a depthArm) {
		if states[a.table].partitioned {
			alone = append(alone, a)
		} else {
			arms = append(arms, a)
		}
	}
	for i, q := range queues {
		out[i].Queue, out[i].Priorities = q, levels[q]
		for level, p := range physicalNames(q, levels[q]) {
			switch st := states[p]; {
			case i >= work:
			case !st.exists:
				missing[i]++
			default:
				a := s.workArm(i, level, p, st, rd)
				if a.sent && st.sent != nil { // read with the states
					out[i].totalSent += *st.sent
					a.sent = false
				}
				add(a)
			}
		}
		if st := states[rd.dlqOf(q)]; st.counted != nil {
			out[i].DLQDepth = *st.counted
		} else if st.exists {
			add(depthArm{queue: i, table: rd.dlqOf(q), dlq: true})
		}
	}
	if arms, err = s.dropEmptyArms(ctx, arms, out); err != nil {
		return nil, false, err
	}
	chunks := slices.Collect(slices.Chunk(arms, depthChunk))
	for _, a := range alone {
		chunks = append(chunks, []depthArm{a})
	}
	for _, chunk := range chunks {
		if err := s.readDepths(ctx, chunk, out, gone); err != nil {
			return nil, false, err
		}
	}
	kept := out[:0]
	for i, d := range out {
		switch {
		case gone[i]:
			continue // its DLQ may be gone too: the next read says
		case i >= work || missing[i] == len(physicalNames(d.Queue, levels[d.Queue])):
			d = QueueDepth{Queue: d.Queue, DLQDepth: d.DLQDepth, Dropped: true, Priorities: d.Priorities}
		}
		if !d.Dropped || d.DLQDepth > 0 {
			kept = append(kept, d)
		}
	}
	slices.SortFunc(kept, func(a, b QueueDepth) int { return strings.Compare(a.Queue, b.Queue) })
	return kept, len(gone) > 0, nil
}

// workArm is the arm that reads the physical work queue table of
// queue i (an index of the result) at a priority level, whose state is st.
func (s *Store) workArm(i, level int, table string, st tableState, rd depthRead) depthArm {
	return depthArm{queue: i, level: level, table: table, archive: rd.archive && st.archive, sent: rd.sent, hasArchive: st.archive,
		live: s.beyondExact(st), archived: s.beyondArchiveExact(st)}
}

// queuesToRead lists the queues a depth read reads, the first work of
// them work queues and the rest dropped ones, with their priority levels:
// every queue, or only the one named.
func (s *Store) queuesToRead(ctx context.Context, only string) (queues []string, work int, levels map[string]int, err error) {
	if only != "" {
		var n int
		err := s.reads.QueryRow(ctx, `SELECT coalesce((SELECT priorities FROM pgbus.queues WHERE queue_name = $1), 0)`, only).Scan(&n)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("store: read the priority levels of queue %q: %w", only, err)
		}
		return []string{only}, 1, map[string]int{only: n}, nil
	}
	all, levels, err := s.queueCatalog(ctx)
	if err != nil {
		return nil, 0, nil, err
	}
	queues = workQueues(all, levels)
	work = len(queues)
	return append(queues, droppedQueues(all, queues, levels)...), work, levels, nil
}

// ExactCountLimit is how many rows a queue table, or its archive, may hold
// for a depth read to count them: counting reads every row (0.4 s for
// 4,000,000 messages), and health checks, probes and scrapes read every
// few seconds, in a backlog most of all. A larger table's rows are the
// statistics system's count, which follows sends and deletes within a
// second or so (QueueDepth.Estimated).
const ExactCountLimit = 1_000_000

// ExactCountPages is how many pages (8 kB each, 32 MB in all) a queue
// table may take for a depth read to count its rows, whatever their
// number: counting reads every page, and rows are as large as their
// payloads. A million messages of 350 bytes take 320 MB, which counting
// read in more than a second at each scrape, a third of a busy database's
// time, where the estimate takes milliseconds. 4,096 pages hold 300,000
// small messages or 20,000 of 1.5 kB, which a count reads in a tenth of
// that second; a larger table is estimated as one of more than
// ExactCountLimit rows is (QueueDepth.Estimated).
const ExactCountPages = 4096

// ArchiveExactCountLimit is how many rows an archive may hold for a read
// of the queues' stats to count them. An archive only grows until
// retention, and its count only says how much is kept: counted row by row,
// the archives of a few dozen busy queues took a second a read (3,100,000
// rows). A larger archive's rows, or those of one of more pages than
// ExactCountPages, are the statistics system's count, or the planner's
// estimate (pg_class.reltuples) where the statistics system has none
// (QueueStats.ArchivedEstimated).
const ArchiveExactCountLimit = 100_000

// SetExactCountLimit makes the depth reads of s count the rows of tables
// of up to n rows, instead of ExactCountLimit: more for exact counts of
// larger queues at the cost of reading them whole at each read, fewer to
// see estimates on a small database. n < 1 restores ExactCountLimit.
// Archives are counted up to ArchiveExactCountLimit rows, or n when less.
func (s *Store) SetExactCountLimit(n int64) { s.exactLimit.Store(max(n, 0)) }

// SetExactCountPages makes the depth reads of s count the rows of tables
// and archives of up to n pages, instead of ExactCountPages. n < 1
// restores ExactCountPages.
func (s *Store) SetExactCountPages(n int64) { s.exactPages.Store(max(n, 0)) }

// beyondExact is the estimate of the rows of a queue table whose state is
// st when they are too many, or take too many pages, to count at each
// read, else 0: the statistics system's count, or, for a table of too many
// pages where it counts none (its counters reset), the planner's, at least
// 1.
func (s *Store) beyondExact(st tableState) int64 {
	switch {
	case st.live > cmp.Or(s.exactLimit.Load(), ExactCountLimit):
		return st.live
	case st.pages > cmp.Or(s.exactPages.Load(), ExactCountPages):
		return max(st.planned, 1)
	}
	return 0
}

// beyondArchiveExact is beyondExact for the archive of a table whose
// state is st: its rows as archiveTuplesSQL estimates them, at least 1.
func (s *Store) beyondArchiveExact(st tableState) int64 {
	if st.archived > min(cmp.Or(s.exactLimit.Load(), ExactCountLimit), ArchiveExactCountLimit) ||
		st.archivePages > cmp.Or(s.exactPages.Load(), ExactCountPages) {
		return max(st.archived, 1)
	}
	return 0
}

// depthChunk is how many tables one statement of QueueDepths reads: few
// enough that the locks of the tables, their indexes and partitions, held
// to the end of its transaction, stay a small part of the server's lock
// table however many processes scrape at once.
const depthChunk = 16

// emptyBatch is how many arms one statement of dropEmptyArms looks at:
// it locks their tables and archives, not their indexes.
const emptyBatch = 50

// dropEmptyArms returns arms without those whose table has not a single
// block, and so no row, nor its archive when the arm reads it: their
// counts are all 0, and what they were sent is read with the sizes, into
// out. Planning a statement over a queue table opens the table and each
// of its indexes, which a database of thousands of idle queues paid for
// at every read. An arm whose table is partitioned (whose parent has no
// blocks of its own) or estimated is kept.
func (s *Store) dropEmptyArms(ctx context.Context, arms []depthArm, out []QueueDepth) ([]depthArm, error) {
	var look []int
	for i, a := range arms {
		if a.live == 0 && a.archived == 0 {
			look = append(look, i)
		}
	}
	empty := make([]bool, len(arms))
	for batch := range slices.Chunk(look, emptyBatch) {
		tables := make([]string, len(batch))
		archives, sent := make([]bool, len(batch)), make([]bool, len(batch))
		for j, i := range batch {
			a := arms[i]
			tables[j], archives[j], sent[j] = a.table, a.archive || (a.sent && a.hasArchive), a.sent
		}
		found, err := s.emptyOf(ctx, tables, archives, sent)
		if s.reads.retry(ctx, err) {
			found, err = s.emptyOf(withForcedPing(ctx), tables, archives, sent)
		}
		switch {
		case isUndefinedTable(err), relationGone(err):
			continue // a table went meanwhile: the depth read tells which
		case err != nil:
			return nil, fmt.Errorf("store: read which queue tables are empty: %w", err)
		}
		for j, total := range found {
			i := batch[j]
			empty[i] = true
			out[arms[i].queue].totalSent += total
		}
	}
	kept := arms[:0]
	for i, a := range arms {
		if !empty[i] {
			kept = append(kept, a)
		}
	}
	return kept, nil
}

// emptyOf returns, by their index in tables, those that have no block
// and whose archive has none either where archives says it counts, with
// how many messages were sent to each where sent says so. With no row in
// the table or its archive, totalSentSQL's greatest() is the inserts the
// statistics system counted. Sizes are read of the tables named alone,
// each looked up first: a size read as a filter of pg_class, which a plan
// may apply to every row it scans, would open every table of the
// database, and fail on one that anyone dropped meanwhile.
func (s *Store) emptyOf(ctx context.Context, tables []string, archives, sent []bool) (map[int]int64, error) {
	found := map[int]int64{}
	err := pgx.BeginTxFunc(ctx, s.reads, depthTx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT u.i - 1, CASE WHEN u.sent THEN coalesce((
			           SELECT CASE WHEN has_sequence_privilege(s.seq, 'SELECT, USAGE') THEN `+sentOfSequenceSQL("s.seq")+`
			                       ELSE pg_stat_get_tuples_inserted(u.q) END
			           FROM (SELECT pg_get_serial_sequence(format('%I.%I', 'pgmq', 'q_' || u.n), 'msg_id')::regclass AS seq) s), 0)
			       ELSE 0 END
			FROM (SELECT u.*, to_regclass(format('%I.%I', 'pgmq', 'q_' || u.n)) AS q, to_regclass(format('%I.%I', 'pgmq', 'a_' || u.n)) AS a
			      FROM unnest($1::text[], $2::bool[], $3::bool[]) WITH ORDINALITY AS u(n, arch, sent, i) OFFSET 0) u
			WHERE (SELECT relkind FROM pg_catalog.pg_class WHERE oid = u.q) = 'r' AND pg_relation_size(u.q) = 0
			  AND (NOT u.arch OR ((SELECT relkind FROM pg_catalog.pg_class WHERE oid = u.a) = 'r' AND pg_relation_size(u.a) = 0))`,
			pgx.QueryExecModeExec, tables, archives, sent)
		if err != nil {
			return err
		}
		var i int
		var total int64
		_, err = pgx.ForEachRow(rows, []any{&i, &total}, func() error {
			found[i] = total
			return nil
		})
		return err
	})
	return found, err
}

// depthArm is a table QueueDepths reads: a physical work queue of
// queue (an index of its result), or its DLQ when that has no group
// counts. A work queue's arm may also count its archive (archive) and
// read how many messages were sent to it (sent); hasArchive tells
// whether its archive table exists.
type depthArm struct {
	queue                     int
	level                     int // of a queue with priority levels
	table                     string
	dlq                       bool
	archive, sent, hasArchive bool
	// live and archived are the estimates of the rows of the table and of
	// its archive to read instead of counting them, 0 to count them.
	live, archived int64
}

// tableState is what a depth read needs to know of a queue's tables.
type tableState struct {
	exists      bool   // its table
	archive     bool   // its archive table exists
	partitioned bool   // its table is partitioned: read alone
	counted     *int64 // a DLQ's depth, from its group counts when they are kept
	// live and archived are the statistics system's counts of the live
	// rows of the table and of its archive (archiveTuplesSQL).
	live, archived int64
	// pages is the size of the table in pages (of its partitions, for a
	// partitioned one; 0 for a DLQ whose groups are counted), planned the
	// estimate of its rows as archiveTuplesSQL makes it.
	pages, planned int64
	// archivePages is the size of its archive in pages, 0 for none.
	archivePages int64
	// sent is how many messages were ever sent to it, read from its id
	// sequence when asked for and the role may read that; else nil.
	sent *int64
}

// liveTuplesSQL is the statistics system's count of the live rows of the
// table whose regclass is the SQL expression reg, 0 for none: of a
// partitioned table, the sum over its partitions, which hold the rows.
func liveTuplesSQL(reg string) string {
	return `coalesce(CASE WHEN (SELECT c.relkind = 'p' FROM pg_class c WHERE c.oid = ` + reg + `)
		THEN (SELECT sum(pg_stat_get_live_tuples(p.relid))::bigint FROM pg_partition_tree(` + reg + `) p WHERE p.isleaf)
		ELSE pg_stat_get_live_tuples(` + reg + `) END, 0)`
}

// archiveTuplesSQL is the estimate of the rows of the archive whose
// regclass is the SQL expression reg, 0 for none: the statistics system's
// count (liveTuplesSQL), which follows inserts within seconds, or where it
// counts none (its counters reset, as after a crash) the planner's, which
// the last vacuum or analyze left in pg_class.reltuples (-1 for a table
// never analyzed), of a partitioned archive its partitions'.
func archiveTuplesSQL(reg string) string {
	return `coalesce(nullif(` + liveTuplesSQL(reg) + `, 0),
		CASE WHEN (SELECT c.relkind = 'p' FROM pg_class c WHERE c.oid = ` + reg + `)
		THEN (SELECT sum(greatest(c.reltuples, 0))::bigint FROM pg_partition_tree(` + reg + `) p JOIN pg_class c ON c.oid = p.relid WHERE p.isleaf)
		ELSE (SELECT greatest(c.reltuples, 0)::bigint FROM pg_class c WHERE c.oid = ` + reg + `) END, 0)`
}

// pagesSQL is the size in pages of the table whose regclass is the SQL
// expression reg, 0 for none: of a partitioned table, the sum over its
// partitions. pg_relation_size returns NULL for a table dropped since reg
// was looked up.
func pagesSQL(reg string) string {
	return `coalesce(CASE WHEN (SELECT c.relkind = 'p' FROM pg_class c WHERE c.oid = ` + reg + `)
		THEN (SELECT sum(pg_relation_size(p.relid))::bigint FROM pg_partition_tree(` + reg + `) p WHERE p.isleaf)
		ELSE pg_relation_size(` + reg + `) END, 0) / current_setting('block_size')::bigint`
}

// tableStatesSQL reads the state of the tables of each queue named in
// $1: its name, whether its table and archive exist, whether its table is
// partitioned, a tracked DLQ's depth from its group counts (read once
// for all names: dlqCountedDepthsCTE), the
// statistics system's counts of the live rows of its table and archive,
// the size of its table in pages (not read of a tracked DLQ) with the
// estimate of its rows (archiveTuplesSQL), the size of its archive, and
// with $2 the messages ever sent to it where the role may read its id
// sequence (sentOfSequenceSQL; NULL where it may not, or without $2),
// found as pg_get_serial_sequence finds it, from the table's oid rather
// than its name, which a table dropped meanwhile would fail on.
// Read here, from the catalog, that count is no subquery of the depth
// read, which planned the three of them per queue at each read: half the
// time of a read of every queue's stats.
var tableStatesSQL = `
		WITH ` + dlqCountedDepthsCTE("$1::text[]") + `
		SELECT n, r IS NOT NULL, a IS NOT NULL,
		       coalesce((SELECT c.relkind = 'p' FROM pg_class c WHERE c.oid = r), false),
		       CASE WHEN ` + dlqTrackedSQL("r") + ` THEN coalesce(d.depth, 0) END,
		       ` + liveTuplesSQL("r") + `, ` + archiveTuplesSQL("a") + `,
		       CASE WHEN r IS NULL OR ` + dlqTrackedSQL("r") + ` THEN 0 ELSE ` + pagesSQL("r") + ` END,
		       ` + archiveTuplesSQL("r") + `, ` + pagesSQL("a") + `,
		       CASE WHEN $2::boolean AND r IS NOT NULL THEN (
		           SELECT CASE WHEN has_sequence_privilege(s.seq, 'SELECT, USAGE') THEN ` + sentOfSequenceSQL("s.seq") + ` END
		           FROM (SELECT d.objid::regclass AS seq FROM pg_catalog.pg_depend d
		                 JOIN pg_catalog.pg_attribute at ON at.attrelid = r AND at.attname = 'msg_id' AND NOT at.attisdropped
		                 WHERE d.refclassid = 'pg_catalog.pg_class'::regclass AND d.refobjid = r AND d.refobjsubid = at.attnum
		                   AND d.classid = 'pg_catalog.pg_class'::regclass AND d.deptype IN ('a', 'i')
		                   AND (SELECT c.relkind FROM pg_catalog.pg_class c WHERE c.oid = d.objid) = 'S'
		                 LIMIT 1) s) END
		FROM unnest($1::text[]) AS n
		     CROSS JOIN LATERAL to_regclass(format('%I.%I', 'pgmq', 'q_' || n)) AS r
		     CROSS JOIN LATERAL to_regclass(format('%I.%I', 'pgmq', 'a_' || n)) AS a
		     LEFT JOIN counted_depths d ON d.dlq = n`

// tableStateChunk is how many names one statement of tableStates reads:
// the size of a table (pg_relation_size) and the id sequence read lock
// them to the end of the transaction, three relations a name.
const tableStateChunk = 50

// tableStates returns the state of the tables of each queue named, with
// how many messages were sent to each when sent is set. Each chunk of
// names is read in a transaction of its own, without JIT, as a depth
// read: planned over thousands of names, the statement's estimates added
// up to a cost that had it compiled, for seconds (two of a read of 1,500
// queues' stats) where it runs in a fraction of one.
func (s *Store) tableStates(ctx context.Context, names []string, sent bool) (map[string]tableState, error) {
	out := make(map[string]tableState, len(names))
	for chunk := range slices.Chunk(names, tableStateChunk) {
		err := s.tableStatesOnce(ctx, chunk, sent, out)
		if s.reads.retry(ctx, err) {
			err = s.tableStatesOnce(withForcedPing(ctx), chunk, sent, out)
		}
		if sent && (isUndefinedTable(err) || relationGone(err)) {
			// A table, or its sequence, dropped meanwhile: the depth
			// read reads what was sent, and says which went.
			err = s.tableStatesOnce(ctx, chunk, false, out)
		}
		if err != nil {
			return nil, fmt.Errorf("store: read which queue tables exist: %w", err)
		}
	}
	return out, nil
}

// tableStatesOnce reads the states of names into out, in one statement.
func (s *Store) tableStatesOnce(ctx context.Context, names []string, sent bool, out map[string]tableState) error {
	return pgx.BeginTxFunc(ctx, s.reads, depthTx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, tableStatesSQL, names, sent)
		if err != nil {
			return err
		}
		var name string
		var st tableState
		var n, total *int64
		_, err = pgx.ForEachRow(rows, []any{&name, &st.exists, &st.archive, &st.partitioned, &n, &st.live, &st.archived, &st.pages, &st.planned, &st.archivePages, &total}, func() error {
			st.counted, st.sent = nil, nil
			if n != nil {
				counted := *n // n may be scanned into again
				st.counted = &counted
			}
			if total != nil {
				t := *total
				st.sent = &t
			}
			out[name] = st
			return nil
		})
		return err
	})
}

// readDepths reads the tables of arms in one statement, adding their
// counts to out, once more on a checked connection when the first was
// lost (it only reads). When a table was dropped since it was listed,
// each is read on its own: a missing work queue is marked gone, a missing
// DLQ counts nothing.
func (s *Store) readDepths(ctx context.Context, arms []depthArm, out []QueueDepth, gone map[int]bool) error {
	err := s.readDepthsOnce(ctx, arms, out)
	if s.reads.retry(ctx, err) {
		err = s.readDepthsOnce(withForcedPing(ctx), arms, out)
	}
	switch {
	case isUndefinedTable(err) && len(arms) == 1:
		gone[arms[0].queue] = gone[arms[0].queue] || !arms[0].dlq
		return nil
	case isUndefinedTable(err), isUndefinedColumn(err) && len(arms) > 1:
	default:
		return err
	}
	// Each read on its own: a table dropped since it was listed, or one
	// of another shape than PGMQ's (made by hand under a queue's name),
	// would otherwise fail the read of every queue. The latter counts
	// nothing.
	for _, a := range arms {
		if err := s.readDepths(ctx, []depthArm{a}, out, gone); err != nil && !isUndefinedColumn(err) {
			return err
		}
	}
	return nil
}

// depthTx is the transaction of a depth read: without JIT, since the
// planner's estimates for a statement over many tables add up to a cost
// that has it compiled, which takes seconds for what runs in milliseconds.
var depthTx = pgx.TxOptions{BeginQuery: "BEGIN ISOLATION LEVEL READ COMMITTED READ ONLY; SET LOCAL jit = off"}

// readDepthsOnce reads the tables of arms in one statement, adding their
// counts to out only when all were read. Its text changes with the tables,
// so it is not prepared: it would crowd the statements workers run out of
// each connection's cache.
func (s *Store) readDepthsOnce(ctx context.Context, arms []depthArm, out []QueueDepth) error {
	tx, err := s.reads.BeginTx(ctx, depthTx)
	if err != nil {
		return fmt.Errorf("store: read the depths of queues: %w", err)
	}
	defer func() {
		// Within its own time: a caller's deadline that passed must not
		// skip it, and a stalled connection must not hold it for ever.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tx.Rollback(ctx) // it only read
	}()
	sql, args := depthSQL(arms)
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return depthErr(err, arms)
	}
	type counts struct {
		depth, visible, scheduled, retrying int64
		oldestVisible, oldest               float64
		archived, totalSent                 int64
	}
	read := make([]counts, len(arms))
	var i int
	var c counts
	_, err = pgx.ForEachRow(rows, []any{&i, &c.depth, &c.visible, &c.scheduled, &c.retrying, &c.oldestVisible, &c.oldest, &c.archived, &c.totalSent}, func() error {
		read[i] = c
		return nil
	})
	if err != nil {
		return depthErr(err, arms)
	}
	for i, a := range arms {
		d, c := &out[a.queue], read[i]
		if a.dlq {
			d.DLQDepth = c.depth
			continue
		}
		d.Estimated = d.Estimated || a.live > 0
		d.archivedEstimated = d.archivedEstimated || (a.archive && a.archived > 0)
		d.Visible += c.visible
		d.Scheduled += c.scheduled
		d.WaitingRetry += c.retrying
		d.InFlight += c.depth - c.visible - c.scheduled - c.retrying
		if c.oldestVisible > d.OldestVisibleAgeSeconds {
			d.OldestVisibleAgeSeconds, d.OldestVisibleLevel = c.oldestVisible, a.level
		}
		d.OldestAgeSeconds = max(d.OldestAgeSeconds, c.oldest)
		d.archived += c.archived
		d.totalSent += c.totalSent
	}
	return nil
}

// depthSQL is the statement that reads the tables of arms, with its
// arguments, the first of them the query mode.
func depthSQL(arms []depthArm) (string, []any) {
	var sql strings.Builder
	args := []any{pgx.QueryExecModeExec}
	for i, a := range arms {
		if i > 0 {
			sql.WriteString("\nUNION ALL\n")
		}
		if a.dlq {
			fmt.Fprintf(&sql, `SELECT %d, count(*), 0::bigint, 0::bigint, 0::bigint, 0::float8, 0::float8, 0::bigint, 0::bigint FROM %s`, i, queueTable(a.table))
			continue
		}
		// args[0] is the mode: parameter $n is args[n].
		args = append(args, a.table)
		counts, from := liveCountsSQL(fmt.Sprintf("$%d", len(args)-1)), queueTable(a.table)+" q"
		if a.live > 0 {
			args = append(args, a.live)
			counts, from = estimatedCountsSQL(queueTable(a.table), fmt.Sprintf("$%d", len(args)-2), fmt.Sprintf("$%d", len(args)-1))
		}
		archived, sent := `0::bigint`, `0::bigint`
		switch {
		case a.archive && a.archived > 0:
			archived = fmt.Sprintf("%d::bigint", a.archived)
		case a.archive:
			archived = `(SELECT count(*) FROM ` + archiveTable(a.table) + `)`
		}
		if a.sent {
			args = append(args, queueTable(a.table))
			sent = totalSentSQL(a.table, fmt.Sprintf("$%d", len(args)-1), a.hasArchive)
		}
		fmt.Fprintf(&sql, `SELECT %d, %s, %s, %s FROM %s`, i, counts, archived, sent, from)
	}
	return sql.String(), args
}

// liveCountsSQL is the select list that counts the messages of a queue
// table aliased q, whose physical name is the SQL expression name: all of
// them, the visible, the scheduled (not yet read, or held by an open
// circuit breaker) and the retrying ones (their last attempt recorded as
// failed), then how long in seconds the
// message ready longest has been ready (since its vt) and the age of the
// oldest message, 0 without one.
func liveCountsSQL(name string) string {
	return `count(*),
		count(*) FILTER (WHERE vt <= now()),
		count(*) FILTER (WHERE vt > now() AND (read_ct = 0 OR ` + breakerHeldSQL + `)),
		count(*) FILTER (WHERE vt > now() AND read_ct > 0 AND NOT ` + breakerHeldSQL + ` AND ` + lastAttemptFailedSQL(name) + `),
		coalesce(extract(epoch FROM now() - min(vt) FILTER (WHERE vt <= now())), 0)::float8,
		coalesce(extract(epoch FROM now() - min(enqueued_at)), 0)::float8`
}

// estimatedCountsSQL is liveCountsSQL, and the FROM clause it reads, for
// a queue table too large to count at each read: table as SQL, whose
// physical name is the SQL expression name, with live, an SQL expression,
// the statistics system's count of its rows. What stands behind the
// visibility timeout (in flight, retrying, scheduled) is counted through
// the vt index, and the age of the message ready longest read there; the
// visible messages are the estimate less those, at least 1 while one is
// visible and 0 when none is, so that a queue drained since the statistics
// were counted shows none. The oldest message is the one of the lowest id.
func estimatedCountsSQL(table, name, live string) (list, from string) {
	list = `inv.n + vis.n, vis.n, inv.scheduled, inv.retrying,
		coalesce(extract(epoch FROM now() - vis.oldest), 0)::float8,
		coalesce(extract(epoch FROM now() - (SELECT o.enqueued_at FROM ` + table + ` o ORDER BY o.msg_id LIMIT 1)), 0)::float8`
	from = `(SELECT count(*) AS n, count(*) FILTER (WHERE q.read_ct = 0 OR ` + breakerHeldSQL + `) AS scheduled,
		        count(*) FILTER (WHERE q.read_ct > 0 AND NOT ` + breakerHeldSQL + ` AND ` + lastAttemptFailedSQL(name) + `) AS retrying
		 FROM ` + table + ` q WHERE q.vt > now()) inv,
		LATERAL (SELECT min(v.vt) AS oldest FROM ` + table + ` v WHERE v.vt <= now()) old,
		LATERAL (SELECT CASE WHEN old.oldest IS NULL THEN 0 ELSE greatest(` + live + `::bigint - inv.n, 1) END AS n, old.oldest) vis`
	return list, from
}

// lastAttemptFailedSQL is the condition that the message of a queue table
// aliased q, whose physical name is the SQL expression name, has a failure
// recorded for the attempt it is on. The failures of a trip before it went
// to a DLQ come back with it, keyed to its new id, while its attempts start
// again at 1; a retry out of a DLQ enqueues it anew, so only a failure
// recorded since it was enqueued is one of this trip's.
func lastAttemptFailedSQL(name string) string { return failedAtAttemptSQL(name, "") }

// lastAttemptFailedAfterSQL is lastAttemptFailedSQL for the messages of
// ids after after (SQL: a parameter), which it tells the failures' scan
// too, so that the scan of a batch that starts there starts there as well
// rather than at the queue's first failure.
func lastAttemptFailedAfterSQL(name, after string) string {
	return failedAtAttemptSQL(name, " AND f.msg_id > "+after)
}

func failedAtAttemptSQL(name, and string) string {
	return `EXISTS (SELECT 1 FROM pgbus.failures f WHERE f.queue_name = ` + name + ` AND f.msg_id = q.msg_id` + and + `
		AND f.attempt = q.read_ct AND f.failed_at >= q.enqueued_at)`
}

// depthErr is the error of a depth read of arms: "relation does not exist"
// as it is, for readDepths to look at, and else with what was read.
func depthErr(err error, arms []depthArm) error {
	if isUndefinedTable(err) {
		return err
	}
	if len(arms) == 1 {
		return queueErr(err, "read the depth of", arms[0].table)
	}
	return fmt.Errorf("store: read the depths of %d queues, %q to %q: %w", len(arms), arms[0].table, arms[len(arms)-1].table, err)
}
