// OpenSSL's libcrypto, the parts trialwatch signs with: HMAC-SHA256 (Standard Webhooks'
// signatures), the system's random bytes (secrets) and a comparison in constant time. A table of
// its functions filled by dlopen, as CCurl's: only the programs that sign map libcrypto.
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#define TW_CRYPTO_FUNCTIONS(X) X(HMAC) X(EVP_sha256) X(RAND_bytes) X(CRYPTO_memcmp)

#define TW_CRYPTO_FIELD(name) __typeof__(&name) _Nonnull name;
typedef struct {
  TW_CRYPTO_FUNCTIONS(TW_CRYPTO_FIELD)
} TWCrypto;
#undef TW_CRYPTO_FIELD

// The library's name as its package installs it (Debian: libssl3).
#define TW_CRYPTO_SONAME "libcrypto.so.3"

// Opens libcrypto and returns its table, which lives as long as the process; or NULL with the
// reason in `error`. Call it once.
static inline const TWCrypto *_Nullable tw_crypto_open(char *_Nonnull error, size_t size) {
  void *library = dlopen(TW_CRYPTO_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    const char *reason = dlerror();
    snprintf(error, size, "%s", reason ? reason : TW_CRYPTO_SONAME ": cannot be opened");
    return NULL;
  }
  TWCrypto *table = calloc(1, sizeof *table);
  if (table == NULL) {
    snprintf(error, size, "out of memory");
    dlclose(library);
    return NULL;
  }
#define TW_CRYPTO_RESOLVE(name) \
  table->name = (__typeof__(&name))dlsym(library, #name); \
  if (table->name == NULL) { \
    snprintf(error, size, "%s has no function %s (OpenSSL 3 is needed)", TW_CRYPTO_SONAME, #name); \
    free(table); \
    dlclose(library); \
    return NULL; \
  }
  TW_CRYPTO_FUNCTIONS(TW_CRYPTO_RESOLVE)
#undef TW_CRYPTO_RESOLVE
  return table;
}
