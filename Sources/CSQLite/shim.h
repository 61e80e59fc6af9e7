#include <sqlite3.h>

/// SQLITE_TRANSIENT is a macro cast Swift cannot import; this gives it a name Swift can call.
static inline sqlite3_destructor_type plistsync_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}
