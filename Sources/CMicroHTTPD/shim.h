// libmicrohttpd's declarations, and a table of its functions filled by dlopen: only the HTTP
// gateway (trialwatch-http) maps libmicrohttpd; trialwatchd and trialwatchctl, the same program,
// never do. The table's types are taken with __typeof__ from the declarations. MHD_start_daemon
// and MHD_get_connection_info take variadic arguments, which Swift cannot pass: the wrappers below
// pass them.
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include "../CLibraryTable/library_table.h"

// The functions the gateway calls, each once here.
#define TW_MHD_FUNCTIONS(X) \
  X(MHD_start_daemon) X(MHD_stop_daemon) X(MHD_lookup_connection_value) X(MHD_get_connection_values) \
  X(MHD_create_response_from_buffer) X(MHD_create_response_from_callback) X(MHD_add_response_header) \
  X(MHD_queue_response) X(MHD_destroy_response) X(MHD_get_connection_info) X(MHD_get_version)

TW_LIBRARY_TABLE(TWMicroHTTPD, TW_MHD_FUNCTIONS)

// The library's name as its package installs it (Debian: libmicrohttpd12).
#define TW_MHD_SONAME "libmicrohttpd.so.12"

// Opens libmicrohttpd and returns its table, which lives as long as the process; or NULL with
// the reason in `error`. Call it once.
TW_LIBRARY_OPENER(tw_mhd_open, TWMicroHTTPD, TW_MHD_SONAME, TW_MHD_FUNCTIONS, "libmicrohttpd 0.9.75 or later is needed")

// The enumerators Swift names otherwise (the enums are closed, imported as Swift enums): named
// here once, in the library's words.
static const enum MHD_Result TW_MHD_YES = MHD_YES;
static const enum MHD_Result TW_MHD_NO = MHD_NO;
static const enum MHD_ValueKind TW_MHD_HEADER_KIND = MHD_HEADER_KIND;
static const enum MHD_ValueKind TW_MHD_GET_ARGUMENT_KIND = MHD_GET_ARGUMENT_KIND;
static const enum MHD_ResponseMemoryMode TW_MHD_RESPMEM_MUST_COPY = MHD_RESPMEM_MUST_COPY;

// The limits a gateway's daemon is started with.
typedef struct {
  // The listening socket, already bound and listening (socket activation, or the gateway's own).
  int listen_fd;
  // Seconds a connection may stay silent before it is closed.
  unsigned int connection_timeout;
  // Connections at once; more are refused at accept.
  unsigned int connection_limit;
  // Bytes a connection's request line and headers may take (more: 431).
  size_t memory_limit;
  // The stack of each connection's thread.
  size_t thread_stack;
} TWServerLimits;

// Starts a daemon with a thread per connection (each request may block on the daemon's socket;
// a Watch streams for as long as it is read) on `limits.listen_fd`, strict about what clients
// send (MHD_OPTION_STRICT_FOR_CLIENT: a request line or header that bends the grammar is refused,
// which closes the doors request smuggling uses).
static inline struct MHD_Daemon *_Nullable tw_mhd_start(
    const TWMicroHTTPD *_Nonnull table, TWServerLimits limits,
    MHD_AccessHandlerCallback _Nonnull handler, void *_Nullable handler_cls,
    MHD_RequestCompletedCallback _Nonnull completed, void *_Nullable completed_cls) {
  unsigned int flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
                       MHD_USE_ERROR_LOG | MHD_USE_ITC;
  return table->MHD_start_daemon(
      flags, 0, NULL, NULL, handler, handler_cls,
      MHD_OPTION_LISTEN_SOCKET, (MHD_socket)limits.listen_fd,
      MHD_OPTION_CONNECTION_TIMEOUT, limits.connection_timeout,
      MHD_OPTION_CONNECTION_LIMIT, limits.connection_limit,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, limits.memory_limit,
      MHD_OPTION_THREAD_STACK_SIZE, limits.thread_stack,
      MHD_OPTION_STRICT_FOR_CLIENT, (int)1,
      MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
      MHD_OPTION_END);
}

// The socket of `connection`, or -1.
static inline int tw_mhd_connection_fd(const TWMicroHTTPD *_Nonnull table,
                                       struct MHD_Connection *_Nonnull connection) {
  const union MHD_ConnectionInfo *info =
      table->MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
  return info == NULL ? -1 : (int)info->connect_fd;
}

// The peer's address of `connection`, or NULL.
static inline const struct sockaddr *_Nullable tw_mhd_client_address(
    const TWMicroHTTPD *_Nonnull table, struct MHD_Connection *_Nonnull connection) {
  const union MHD_ConnectionInfo *info =
      table->MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  return info == NULL ? NULL : info->client_addr;
}
