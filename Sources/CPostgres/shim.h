// libpq's declarations, and a table of its functions filled by dlopen: the program maps
// libpq (and the TLS, Kerberos and LDAP libraries it brings) only when it joins a fleet.
// Nothing here refers to a libpq symbol at link time: the table's types are taken with
// __typeof__ from the declarations, so a call through it is checked as a direct call is.
#include <postgresql/libpq-fe.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

// The functions TrialPostgres calls, each once here.
#define TW_LIBPQ_FUNCTIONS(X) \
  X(PQbackendPID) X(PQclear) X(PQcmdTuples) X(PQconnectdb) X(PQconsumeInput) \
  X(PQenterPipelineMode) X(PQerrorMessage) X(PQescapeIdentifier) X(PQescapeLiteral) \
  X(PQexec) X(PQexecParams) X(PQexitPipelineMode) X(PQfinish) X(PQfname) X(PQfreemem) \
  X(PQgetResult) X(PQgetisnull) X(PQgetvalue) X(PQnfields) X(PQnotifies) X(PQntuples) \
  X(PQpipelineSync) X(PQreset) X(PQresultErrorField) X(PQresultErrorMessage) \
  X(PQresultStatus) X(PQsendQueryParams) X(PQserverVersion) X(PQsetNoticeProcessor) \
  X(PQsocket) X(PQstatus)

#define TW_LIBPQ_FIELD(name) __typeof__(&name) _Nonnull name;
typedef struct {
  TW_LIBPQ_FUNCTIONS(TW_LIBPQ_FIELD)
} TWLibPQ;
#undef TW_LIBPQ_FIELD

// The library's name as its package installs it (Debian: libpq5).
#define TW_LIBPQ_SONAME "libpq.so.5"

// Opens libpq and returns its table, which lives as long as the process; or NULL with the
// reason in `error` (dlerror's text, or the name of a missing function). Call it once.
static inline const TWLibPQ *_Nullable tw_libpq_open(char *_Nonnull error, size_t size) {
  void *library = dlopen(TW_LIBPQ_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    const char *reason = dlerror();
    snprintf(error, size, "%s", reason ? reason : TW_LIBPQ_SONAME ": cannot be opened");
    return NULL;
  }
  TWLibPQ *table = calloc(1, sizeof *table);
  if (table == NULL) {
    snprintf(error, size, "out of memory");
    dlclose(library);
    return NULL;
  }
#define TW_LIBPQ_RESOLVE(name) \
  table->name = (__typeof__(&name))dlsym(library, #name); \
  if (table->name == NULL) { \
    snprintf(error, size, "%s has no function %s (libpq 14 or later is needed)", TW_LIBPQ_SONAME, #name); \
    free(table); \
    dlclose(library); \
    return NULL; \
  }
  TW_LIBPQ_FUNCTIONS(TW_LIBPQ_RESOLVE)
#undef TW_LIBPQ_RESOLVE
  return table;
}
