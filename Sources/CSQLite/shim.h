#include <sqlite3.h>

/// SQLITE_TRANSIENT is a macro cast Swift cannot import; this gives it a name Swift can call.
static inline sqlite3_destructor_type plistsync_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

/// Turns off SQLite's memory statistics, which take a global mutex around every allocation;
/// nothing reads them. Takes effect only before SQLite initialises (the first connection).
static inline int plistsync_sqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
