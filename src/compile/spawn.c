/*
 * spawn: fork + exec of a helper process over two pipes, and whole-buffer
 * reads and writes on them. See spawn.h.
 */
#include "compile/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

#include "util.h"

int spawn_piped(const char *exe, const char *entry, int *pid, int *to_fd, int *from_fd)
{
    int to[2] = {-1, -1}, from[2] = {-1, -1};
    char a_in[24], a_out[24];
    if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0)
        goto fail;
    snprintf(a_in, sizeof(a_in), "%d", to[0]);
    snprintf(a_out, sizeof(a_out), "%d", from[1]);
    char *argv[] = {(char *)exe, (char *)entry, a_in, a_out, NULL};
    pid_t p = fork();
    if (p < 0)
        goto fail;
    if (p == 0) {   /* child: only async-signal-safe calls until exec */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        fcntl(to[0], F_SETFD, 0);
        fcntl(from[1], F_SETFD, 0);
        dup2(2, 1);   /* never the parent's stdout */
        execv(argv[0], argv);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    *pid = (int)p;
    *to_fd = to[1];
    *from_fd = from[0];
    return 0;
fail:
    for (int i = 0; i < 2; i++) {
        if (to[i] >= 0)
            close(to[i]);
        if (from[i] >= 0)
            close(from[i]);
    }
    return -1;
}

int spawn_write_all(int fd, const void *buf, size_t n)
{
    const unsigned char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int spawn_read_all(int fd, void *buf, size_t n, double deadline_ms)
{
    unsigned char *p = buf;
    while (n > 0) {
        if (deadline_ms >= 0) {
            struct pollfd pfd = {.fd = fd, .events = POLLIN};
            double left = deadline_ms - time_now_ms();
            if (left <= 0)
                return SPAWN_TIMEOUT;
            int pr = poll(&pfd, 1, left > 2e9 ? 2000000000 : (int)left + 1);
            if (pr < 0 && errno != EINTR)
                return -1;
            if (pr <= 0)
                continue;   /* the loop re-checks the deadline */
        }
        ssize_t r = read(fd, p, n);
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -1;
        }
        if (r == 0)
            return SPAWN_EOF;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}
