// libpq's declarations, and a table of its functions filled by dlopen: the program maps
// libpq (and the TLS, Kerberos and LDAP libraries it brings) only when it joins a fleet.
// Nothing here refers to a libpq symbol at link time: the table's types are taken with
// __typeof__ from the declarations, so a call through it is checked as a direct call is.
#include <postgresql/libpq-fe.h>
#include "../CLibraryTable/library_table.h"

// The functions TrialPostgres calls, each once here.
#define TW_LIBPQ_FUNCTIONS(X) \
  X(PQbackendPID) X(PQclear) X(PQcmdTuples) X(PQconnectdb) X(PQconsumeInput) \
  X(PQenterPipelineMode) X(PQerrorMessage) X(PQescapeIdentifier) X(PQescapeLiteral) \
  X(PQexec) X(PQexecParams) X(PQexitPipelineMode) X(PQfinish) X(PQfname) X(PQfreemem) \
  X(PQgetResult) X(PQgetisnull) X(PQgetvalue) X(PQnfields) X(PQnotifies) X(PQntuples) \
  X(PQpipelineSync) X(PQreset) X(PQresultErrorField) X(PQresultErrorMessage) \
  X(PQresultStatus) X(PQsendQueryParams) X(PQserverVersion) X(PQsetNoticeProcessor) \
  X(PQsocket) X(PQstatus)

TW_LIBRARY_TABLE(TWLibPQ, TW_LIBPQ_FUNCTIONS)

// The library's name as its package installs it (Debian: libpq5).
#define TW_LIBPQ_SONAME "libpq.so.5"

// Opens libpq and returns its table, which lives as long as the process; or NULL with the
// reason in `error` (dlerror's text, or the name of a missing function). Call it once.
TW_LIBRARY_OPENER(tw_libpq_open, TWLibPQ, TW_LIBPQ_SONAME, TW_LIBPQ_FUNCTIONS, "libpq 14 or later is needed")
