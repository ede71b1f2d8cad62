// OpenSSL's libcrypto, the parts trialwatch signs with: HMAC-SHA256 (Standard Webhooks'
// signatures), SHA-256 (the HTTP gateway's token hashes), the system's random bytes (secrets) and a
// comparison in constant time. A table of
// its functions filled by dlopen, as CCurl's: only the programs that sign map libcrypto.
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include "../CLibraryTable/library_table.h"

#define TW_CRYPTO_FUNCTIONS(X) X(HMAC) X(EVP_sha256) X(EVP_Digest) X(RAND_bytes) X(CRYPTO_memcmp)

TW_LIBRARY_TABLE(TWCrypto, TW_CRYPTO_FUNCTIONS)

// The library's name as its package installs it (Debian: libssl3).
#define TW_CRYPTO_SONAME "libcrypto.so.3"

// Opens libcrypto and returns its table, which lives as long as the process; or NULL with the
// reason in `error`. Call it once.
TW_LIBRARY_OPENER(tw_crypto_open, TWCrypto, TW_CRYPTO_SONAME, TW_CRYPTO_FUNCTIONS, "OpenSSL 3 is needed")
