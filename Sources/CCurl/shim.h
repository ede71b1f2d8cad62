// libcurl's declarations, and a table of its functions filled by dlopen: only the webhook
// sender maps libcurl (and the TLS and HTTP/2 libraries it brings); trialwatchd and
// trialwatchctl, the same program, never do. Nothing here refers to a libcurl symbol at link
// time: the table's types are taken with __typeof__ from the declarations, so that a call
// through it is checked as a direct call is. curl_easy_setopt and curl_easy_getinfo take
// variadic arguments, which Swift cannot pass: the wrappers below pass each type once.
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include "../CLibraryTable/library_table.h"
#include <string.h>

// The functions the sender calls, each once here.
#define TW_CURL_FUNCTIONS(X) \
  X(curl_global_init) X(curl_easy_init) X(curl_easy_cleanup) X(curl_easy_reset) \
  X(curl_easy_setopt) X(curl_easy_perform) X(curl_easy_getinfo) X(curl_easy_strerror) \
  X(curl_easy_header) X(curl_slist_append) X(curl_slist_free_all) X(curl_version) X(curl_getdate)

TW_LIBRARY_TABLE(TWCurl, TW_CURL_FUNCTIONS)

// The library's name as its package installs it (Debian: libcurl4, with OpenSSL).
#define TW_CURL_SONAME "libcurl.so.4"

TW_LIBRARY_OPENER(tw_curl_load, TWCurl, TW_CURL_SONAME, TW_CURL_FUNCTIONS, "libcurl 7.84 or later is needed")

// Opens libcurl, initialises it once for the process, and returns its table, which lives as
// long as the process; or NULL with the reason in `error`. Call it once, before any thread
// uses libcurl.
static inline const TWCurl *_Nullable tw_curl_open(char *_Nonnull error, size_t size) {
  const TWCurl *table = tw_curl_load(error, size);
  if (table == NULL) return NULL;
  CURLcode code = table->curl_global_init(CURL_GLOBAL_ALL);
  if (code != CURLE_OK) {
    snprintf(error, size, "curl_global_init failed: %s", table->curl_easy_strerror(code));
    return NULL;
  }
  return table;
}

static inline CURLcode tw_curl_setopt_long(const TWCurl *_Nonnull curl, CURL *_Nonnull handle, CURLoption option,
                                           long value) {
  return curl->curl_easy_setopt(handle, option, value);
}

static inline CURLcode tw_curl_setopt_pointer(const TWCurl *_Nonnull curl, CURL *_Nonnull handle,
                                              CURLoption option, const void *_Nullable value) {
  return curl->curl_easy_setopt(handle, option, value);
}

static inline CURLcode tw_curl_getinfo_long(const TWCurl *_Nonnull curl, CURL *_Nonnull handle, CURLINFO info,
                                            long *_Nonnull value) {
  return curl->curl_easy_getinfo(handle, info, value);
}

static inline CURLcode tw_curl_getinfo_off(const TWCurl *_Nonnull curl, CURL *_Nonnull handle, CURLINFO info,
                                           curl_off_t *_Nonnull value) {
  return curl->curl_easy_getinfo(handle, info, value);
}

// The start of a response's body, kept for the attempt's record; the rest is read and dropped.
#define TW_CURL_BODY_KEPT 512
typedef struct {
  char bytes[TW_CURL_BODY_KEPT];
  size_t count;
} TWCurlBody;

static inline size_t tw_curl_body_write(char *data, size_t size, size_t count, void *target) {
  TWCurlBody *body = target;
  size_t length = size * count;
  size_t room = TW_CURL_BODY_KEPT - body->count;
  size_t kept = length < room ? length : room;
  memcpy(body->bytes + body->count, data, kept);
  body->count += kept;
  return length;
}

// Makes `handle` keep the start of the response's body in `body` (emptied first).
static inline CURLcode tw_curl_keep_body(const TWCurl *_Nonnull curl, CURL *_Nonnull handle,
                                         TWCurlBody *_Nonnull body) {
  body->count = 0;
  CURLcode code = curl->curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, tw_curl_body_write);
  if (code != CURLE_OK) return code;
  return curl->curl_easy_setopt(handle, CURLOPT_WRITEDATA, body);
}

// The value of the response's last header `name`, or NULL when it has none.
static inline const char *_Nullable tw_curl_header(const TWCurl *_Nonnull curl, CURL *_Nonnull handle,
                                                   const char *_Nonnull name) {
  struct curl_header *header = NULL;
  if (curl->curl_easy_header(handle, name, 0, CURLH_HEADER, -1, &header) != CURLHE_OK || header == NULL) {
    return NULL;
  }
  return header->value;
}
