/*
 * sync_fault.so: a failed write or sync of one file, for the test of a failed fdatasync
 * (Tests/TrialDaemonTests/SyncFailureTests.swift). Loaded into trialwatchd with LD_PRELOAD, it
 * stands between the program (LMDB) and the C library's fdatasync, fsync, pwrite, pwritev and
 * writev, and fails one of their calls on the store's data file with EIO, as a dying disk or
 * a thin pool out of space does:
 *
 *   TRIALWATCH_FAULT_FILE   the file (its device and inode, found again at each call)
 *   TRIALWATCH_FAULT_ARMED  a path: calls are counted once something exists there
 *   TRIALWATCH_FAULT_AT     N: the Nth call counted fails with EIO and does nothing
 *   TRIALWATCH_FAULT_LOG    a file each call counted is written to, a line each:
 *                           "N function" and "N function EIO" for the one failed, then
 *                           "after function" for every call on the file after it
 *
 * LMDB's commit writes the changed pages (pwrite, or lseek and writev), syncs them (fdatasync),
 * then writes the meta page through a descriptor opened with O_DSYNC (pwrite, which syncs): a
 * failed pwrite or fdatasync fails the commit with EIO. Calls after the fault go through, as
 * the kernel lets a sync after a failed one succeed (the pages it could not write are marked
 * clean): the test reads from the log that none came but LMDB's own write-back of the old meta
 * page after a failed meta write.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counted = 0;
static int armed = 0;
static int faulted = 0;

/* Whether fd is the data file: the same device and inode as the path. */
static int is_target(int fd) {
  const char *path = getenv("TRIALWATCH_FAULT_FILE");
  struct stat file, open_file;
  if (path == NULL || fstat(fd, &open_file) != 0 || !S_ISREG(open_file.st_mode)) return 0;
  if (stat(path, &file) != 0) return 0;
  return file.st_dev == open_file.st_dev && file.st_ino == open_file.st_ino;
}

static void log_line(const char *line) {
  const char *path = getenv("TRIALWATCH_FAULT_LOG");
  if (path == NULL) return;
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return;
  ssize_t written = write(fd, line, strlen(line));
  (void)written;
  close(fd);
}

/* Whether this call on fd fails: counts it (once armed) and logs it. */
static int should_fail(int fd, const char *function) {
  if (!is_target(fd)) return 0;
  int fail = 0;
  char line[128];
  line[0] = '\0';
  pthread_mutex_lock(&lock);
  if (!armed) {
    const char *armed_path = getenv("TRIALWATCH_FAULT_ARMED");
    armed = armed_path != NULL && access(armed_path, F_OK) == 0;
  }
  if (faulted) {
    snprintf(line, sizeof line, "after %s\n", function);
  } else if (armed) {
    const char *at = getenv("TRIALWATCH_FAULT_AT");
    counted += 1;
    fail = at != NULL && counted == atol(at);
    faulted = fail;
    snprintf(line, sizeof line, "%ld %s%s\n", counted, function, fail ? " EIO" : "");
  }
  if (line[0] != '\0') log_line(line);
  pthread_mutex_unlock(&lock);
  if (fail) errno = EIO;
  return fail;
}

#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

int fdatasync(int fd) {
  if (should_fail(fd, "fdatasync")) return -1;
  return REAL(fdatasync)(fd);
}

int fsync(int fd) {
  if (should_fail(fd, "fsync")) return -1;
  return REAL(fsync)(fd);
}

ssize_t pwrite(int fd, const void *buffer, size_t count, off_t offset) {
  if (should_fail(fd, "pwrite")) return -1;
  return REAL(pwrite)(fd, buffer, count, offset);
}

ssize_t pwrite64(int fd, const void *buffer, size_t count, off_t offset) {
  if (should_fail(fd, "pwrite")) return -1;
  return REAL(pwrite64)(fd, buffer, count, offset);
}

ssize_t pwritev(int fd, const struct iovec *vector, int count, off_t offset) {
  if (should_fail(fd, "pwritev")) return -1;
  return REAL(pwritev)(fd, vector, count, offset);
}

ssize_t writev(int fd, const struct iovec *vector, int count) {
  if (should_fail(fd, "writev")) return -1;
  return REAL(writev)(fd, vector, count);
}
