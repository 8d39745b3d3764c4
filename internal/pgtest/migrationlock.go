package pgtest

// MigrationLockKey is the advisory lock key pgbus's migrations take, one
// at a time (the ASCII bytes of "pgbusmig"), for tests that hold it as
// another migrating process would. The store's tests check it is the
// store's own key.
const MigrationLockKey int64 = 0x7067627573_6d6967
