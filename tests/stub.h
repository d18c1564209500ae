/*
 * stub: start and stop tests/llm_stub.py (the loopback LLM server of the
 * net suite) from a C test. The stub prints "PORT N" when it listens and
 * exits when its stdin closes, so a test that dies takes it along.
 */
#ifndef EVO_TESTS_STUB_H
#define EVO_TESTS_STUB_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

typedef struct Stub {
    pid_t pid;
    int   stdin_fd;   /* closing it makes the stub exit */
    int   port;
    char  url[128];   /* http://127.0.0.1:PORT */
} Stub;

/* Start the stub on a free port with `scenario` from the scenario file
 * data_rel (relative to $EVO_SOURCE_ROOT), checking the API key `key`.
 * Returns 0 with s filled, or -1 (the reason on stderr). */
static inline int stub_start(Stub *s, const char *data_rel, const char *scenario, const char *key)
{
    const char *root = getenv("EVO_SOURCE_ROOT");
    const char *py = getenv("PYTHON3");
    char *script = xasprintf("%s/tests/llm_stub.py", root ? root : ".");
    char *data = xasprintf("%s/%s", root ? root : ".", data_rel);
    int in[2], out[2];
    memset(s, 0, sizeof *s);
    if (pipe(in) < 0 || pipe(out) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execlp(py ? py : "python3", "python3", script, "--port", "0", "--script", data, "--scenario", scenario,
               "--key", key, "--max-seconds", "60", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    free(script);
    free(data);
    s->pid = pid;
    s->stdin_fd = in[1];
    char line[64] = {0};
    size_t n = 0;
    while (n + 1 < sizeof line && read(out[0], line + n, 1) == 1 && line[n] != '\n')
        n++;
    close(out[0]);
    if (sscanf(line, "PORT %d", &s->port) != 1) {
        fprintf(stderr, "stub did not start (scenario %s): \"%s\"\n", scenario, line);
        return -1;
    }
    snprintf(s->url, sizeof s->url, "http://127.0.0.1:%d", s->port);
    return 0;
}

/* Close its stdin, wait up to 2 s, then kill it. */
static inline void stub_stop(Stub *s)
{
    if (s->pid <= 0)
        return;
    close(s->stdin_fd);
    for (int i = 0; i < 200; i++) {
        if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
            s->pid = 0;
            return;
        }
        usleep(10000);
    }
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
}

#endif
