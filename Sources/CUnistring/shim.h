// libunistring's declarations, and its functions filled by dlopen: the program maps the library
// only when it first folds a subject that is not ASCII (SubjectKey=casefold or email of a plan
// granted once). Nothing here refers to a libunistring symbol at link time: the types are taken
// with __typeof__ from the declarations, so a call through the table is checked as a direct
// call is.
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unicase.h>
#include <uninorm.h>

typedef struct {
  __typeof__(&u8_casefold) _Nonnull u8_casefold;
  // UNINORM_NFKC: the address of the library's uninorm_nfkc.
  uninorm_t _Nonnull nfkc;
} TWUnistring;

// The library's name as its package installs it (Debian: libunistring2).
#define TW_UNISTRING_SONAME "libunistring.so.2"

// Opens libunistring and returns its table, which lives as long as the process; or NULL with
// the reason in `error`. Call it once.
static inline const TWUnistring *_Nullable tw_unistring_open(char *_Nonnull error, size_t size) {
  void *library = dlopen(TW_UNISTRING_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    const char *reason = dlerror();
    snprintf(error, size, "%s", reason ? reason : TW_UNISTRING_SONAME ": cannot be opened");
    return NULL;
  }
  TWUnistring *table = calloc(1, sizeof *table);
  if (table == NULL) {
    snprintf(error, size, "out of memory");
    dlclose(library);
    return NULL;
  }
  table->u8_casefold = (__typeof__(&u8_casefold))dlsym(library, "u8_casefold");
  table->nfkc = (uninorm_t)dlsym(library, "uninorm_nfkc");
  if (table->u8_casefold == NULL || table->nfkc == NULL) {
    snprintf(error, size, "%s has no u8_casefold or uninorm_nfkc", TW_UNISTRING_SONAME);
    free(table);
    dlclose(library);
    return NULL;
  }
  return table;
}
