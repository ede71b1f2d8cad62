// libunistring's declarations, and its functions filled by dlopen: the program maps the library
// only when it first folds a subject that is not ASCII (SubjectKey=casefold or email of a plan
// granted once). Nothing here refers to a libunistring symbol at link time: the types are taken
// with __typeof__ from the declarations, so a call through the table is checked as a direct
// call is.
#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <unicase.h>
#include <uninorm.h>

typedef struct {
  __typeof__(&u8_casefold) _Nonnull u8_casefold;
  // UNINORM_NFKC: the address of the library's uninorm_nfkc.
  uninorm_t _Nonnull nfkc;
} TWUnistring;

// The library's name as its package installs it (Debian: libunistring2).
#define TW_UNISTRING_SONAME "libunistring.so.2"

// Opens libunistring and fills `table` with its functions, which stay mapped as long as the
// process runs; or returns false with the reason in `error`. Nothing is allocated: the caller
// owns the table it passes. Call it once.
static inline bool tw_unistring_open(TWUnistring *_Nonnull table, char *_Nonnull error, size_t size) {
  void *library = dlopen(TW_UNISTRING_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    const char *reason = dlerror();
    snprintf(error, size, "%s", reason ? reason : TW_UNISTRING_SONAME ": cannot be opened");
    return false;
  }
  void *casefold = dlsym(library, "u8_casefold");
  void *nfkc = dlsym(library, "uninorm_nfkc");
  if (casefold == NULL || nfkc == NULL) {
    snprintf(error, size, "%s has no u8_casefold or uninorm_nfkc", TW_UNISTRING_SONAME);
    dlclose(library);
    return false;
  }
  table->u8_casefold = (__typeof__(&u8_casefold))casefold;
  table->nfkc = (uninorm_t)nfkc;
  return true;
}
