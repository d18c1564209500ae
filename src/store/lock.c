/*
 * lock: one process at a time per run. A run's advisory lock is a file
 * beside the store, <store>.run<ID>.lock, held with flock() for as long
 * as the Store that took it is open (the kernel drops it when the process
 * dies, kill -9 included) and holding who took it: "pid P host H since T".
 * A second process is refused with those words. See store.h.
 */
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/rows.h"

/* What the holder wrote into the lock file, one line, or "an unknown
 * process" (fresh string). */
static char *holder(int fd)
{
    char buf[256];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0)
        return xstrdup("an unknown process");
    buf[n] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
            *p = '?';
    return xstrdup(buf);
}

/* This process's line: "pid 123 host gpu-7 since 2026-11-26T10:00:00Z". */
static char *me(void)
{
    char host[256] = "?";
    if (gethostname(host, sizeof(host) - 1) != 0)
        snprintf(host, sizeof(host), "?");
    host[sizeof(host) - 1] = '\0';
    char *now = time_iso8601();
    char *line = xasprintf("pid %ld host %s since %s\n", (long)getpid(), host, now);
    free(now);
    return line;
}

struct RunLock {
    int64_t run;
    int     fd;
    char   *path;
};

int store_lock_run(Store *s, int64_t run_id, EvoErr *err)
{
    for (int i = 0; i < s->nlocks; i++)
        if (s->locks[i].run == run_id)
            return 0;
    if (strcmp(s->path, ":memory:") == 0)
        return 0;
    char *path = xasprintf("%s.run%lld.lock", s->path, (long long)run_id);
    for (int tries = 0; tries < 16; tries++) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0) {
            err_set(err, "%s: cannot take the lock of run %lld: %s", path, (long long)run_id, strerror(errno));
            free(path);
            return -1;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            char *who = holder(fd);
            close(fd);
            if (e == EWOULDBLOCK)
                err_set(err, "%s: run %lld is in use by another process: %s (lock file %s); wait for it to end, or "
                        "stop it first", s->path, (long long)run_id, who, path);
            else
                err_set(err, "%s: flock: %s", path, strerror(e));
            free(who);
            free(path);
            return -1;
        }
        /* The holder before us may have removed the file after we opened
         * it: the lock counts only on the file the path still names. */
        struct stat a, b;
        if (fstat(fd, &a) != 0 || stat(path, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
            close(fd);
            continue;
        }
        char *line = me();
        int ok = ftruncate(fd, 0) == 0 && pwrite(fd, line, strlen(line), 0) == (ssize_t)strlen(line);
        free(line);
        if (!ok) {
            err_set(err, "%s: cannot write the lock of run %lld: %s", path, (long long)run_id, strerror(errno));
            unlink(path);
            close(fd);
            free(path);
            return -1;
        }
        s->locks = xrealloc(s->locks, (size_t)(s->nlocks + 1) * sizeof(*s->locks));
        s->locks[s->nlocks++] = (struct RunLock){run_id, fd, path};
        return 0;
    }
    err_set(err, "%s: the lock file of run %lld keeps changing", path, (long long)run_id);
    free(path);
    return -1;
}

void store_unlock_runs(Store *s)
{
    for (int i = 0; i < s->nlocks; i++) {
        unlink(s->locks[i].path);   /* while still holding it: the next taker re-checks the path */
        close(s->locks[i].fd);
        free(s->locks[i].path);
    }
    free(s->locks);
    s->locks = NULL;
    s->nlocks = 0;
}
