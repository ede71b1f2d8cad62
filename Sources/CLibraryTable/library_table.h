// A table of a C library's functions, filled by dlopen: for the libraries a program maps only
// when it uses them (libpq for a fleet, libcurl and libcrypto for webhooks). Each shim.h lists
// its functions once, as an X macro, and builds its table and its opener from these.
#ifndef TW_LIBRARY_TABLE_H
#define TW_LIBRARY_TABLE_H
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

// A field of the table: the function's type taken from its declaration, so that a call through
// the table is checked as a direct call is.
#define TW_LIBRARY_FIELD(name) __typeof__(&name) _Nonnull name;

// Fills the field of `name` from `library`; on a missing function, says which in `error`, frees
// the table, closes the library and returns NULL. Used inside an opener, after
// tw_library_open, with `soname` and `requirement` (what version is needed) in scope.
#define TW_LIBRARY_RESOLVE(name) \
  table->name = (__typeof__(&name))dlsym(library, #name); \
  if (table->name == NULL) { \
    snprintf(error, size, "%s has no function %s (%s)", soname, #name, requirement); \
    free(table); \
    dlclose(library); \
    return NULL; \
  }

// Opens `soname` and allocates a zeroed table of `bytes` for it; or NULL with the reason in
// `error` (dlerror's text).
static inline void *_Nullable tw_library_open(const char *_Nonnull soname, size_t bytes,
                                              void *_Nullable *_Nonnull library, char *_Nonnull error,
                                              size_t size) {
  *library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (*library == NULL) {
    const char *reason = dlerror();
    snprintf(error, size, "%s", reason ? reason : "cannot be opened");
    return NULL;
  }
  void *table = calloc(1, bytes);
  if (table == NULL) {
    snprintf(error, size, "out of memory");
    dlclose(*library);
    return NULL;
  }
  return table;
}

// The table type `Type` of the functions `FUNCTIONS` lists.
#define TW_LIBRARY_TABLE(Type, FUNCTIONS) \
  typedef struct { \
    FUNCTIONS(TW_LIBRARY_FIELD) \
  } Type;

// `function(error, size)`: opens `SONAME` and returns its table of `Type`, which lives as long as
// the process; or NULL with the reason in `error` (dlerror's text, or the name of a missing
// function and `REQUIREMENT`, the version needed). Call it once.
#define TW_LIBRARY_OPENER(function, Type, SONAME, FUNCTIONS, REQUIREMENT) \
  static inline const Type *_Nullable function(char *_Nonnull error, size_t size) { \
    void *library = NULL; \
    Type *table = tw_library_open(SONAME, sizeof *table, &library, error, size); \
    if (table == NULL) return NULL; \
    const char *soname = SONAME, *requirement = REQUIREMENT; \
    FUNCTIONS(TW_LIBRARY_RESOLVE) \
    return table; \
  }
#endif
