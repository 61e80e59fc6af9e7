// Types and constants only: PostgresKit loads libpq itself when it first connects (LibPQ.swift),
// so nothing links it. Debian's libpq-dev puts the header under postgresql/.
#include <postgresql/libpq-fe.h>
