/*
 * cmd: the --llm-cmd runner. See cmd.h.
 */
#include "llm/cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void llm_cmd_start(Llm *l, Job *j)
{
    int sv[2] = {-1, -1}, po[2] = {-1, -1}, pe[2] = {-1, -1};
    LlmResult *r = j->res;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 || pipe2(po, O_CLOEXEC) < 0 ||
        pipe2(pe, O_CLOEXEC) < 0) {
        int e = errno;
        for (int i = 0; i < 2; i++) {
            if (sv[i] >= 0) close(sv[i]);
            if (po[i] >= 0) close(po[i]);
            if (pe[i] >= 0) close(pe[i]);
        }
        j->state = JOB_RUNNING;
        llm_finish(l, j, LLM_CMD_FAILED, "--llm-cmd: pipe: %s", strerror(e));
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        dup2(sv[1], 0);
        dup2(po[1], 1);
        dup2(pe[1], 2);
        execl("/bin/sh", "sh", "-c", l->cfg.cmd, (char *)NULL);
        _exit(127);
    }
    close(sv[1]);
    close(po[1]);
    close(pe[1]);
    j->state = JOB_RUNNING;
    r->attempts = 1;
    if (pid < 0) {
        int e = errno;
        close(sv[0]);
        close(po[0]);
        close(pe[0]);
        llm_finish(l, j, LLM_CMD_FAILED, "--llm-cmd: fork: %s", strerror(e));
        return;
    }
    setpgid(pid, pid);
    j->pid = pid;
    j->in_fd = sv[0];
    j->out_fd = po[0];
    j->err_fd = pe[0];
    set_nonblock(j->in_fd);
    set_nonblock(j->out_fd);
    set_nonblock(j->err_fd);
    if (r->system[0])
        j->input = xasprintf("%s\n\n%s", r->system, r->prompt);
    else
        j->input = xstrdup(r->prompt);
    j->input_len = strlen(j->input);
    j->input_off = 0;
    j->deadline_ms = time_now_ms() + l->cfg.timeout_s * 1000.0;
}

/* Read what is available from fd into sb; returns 1 at EOF (fd closed). */
static int drain(int *fd, StrBuf *sb, size_t cap, int *over)
{
    char buf[16384];
    for (;;) {
        ssize_t n = read(*fd, buf, sizeof buf);
        if (n > 0) {
            if (sb->len + (size_t)n > cap) {
                *over = 1;
                sb_appendn(sb, buf, cap - sb->len);
                return 0;
            }
            sb_appendn(sb, buf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        close(*fd);
        *fd = -1;
        return 1;
    }
}

void llm_cmd_service(Llm *l, Job *j, double now)
{
    int over = 0, dummy = 0;
    /* stdin */
    while (j->in_fd >= 0 && j->input_off < j->input_len) {
        ssize_t n = send(j->in_fd, j->input + j->input_off, j->input_len - j->input_off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            j->input_off += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            j->input_off = j->input_len;  /* the command stopped reading: fine */
        }
    }
    if (j->in_fd >= 0 && j->input_off >= j->input_len) {
        close(j->in_fd);
        j->in_fd = -1;
    }
    if (j->out_fd >= 0)
        drain(&j->out_fd, &j->resp, l->cfg.max_reply_bytes, &over);
    if (j->err_fd >= 0)
        drain(&j->err_fd, &j->errtext, 4096, &dummy);
    if (over) {
        llm_job_kill_cmd(j);
        j->res->reply = llm_redact(l, j->resp.s ? j->resp.s : "");
        llm_finish(l, j, LLM_TOO_LARGE, "--llm-cmd: the output is larger than %zu bytes", l->cfg.max_reply_bytes);
        return;
    }
    int status = 0;
    pid_t w = 0;
    if (j->out_fd < 0 && j->err_fd < 0)
        w = waitpid(j->pid, &status, WNOHANG);
    if (w == j->pid) {
        j->pid = 0;
        llm_job_kill_cmd(j);  /* closes what is left */
        LlmResult *r = j->res;
        r->reply = llm_redact(l, j->resp.s ? j->resp.s : "");
        char *err_tail = llm_redact(l, j->errtext.s ? j->errtext.s : "");
        size_t el = strlen(err_tail);
        while (el && (err_tail[el - 1] == '\n' || err_tail[el - 1] == '\r'))
            err_tail[--el] = 0;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            r->http_status = 0;
            llm_finish_text(l, j, r->reply);
        } else if (WIFEXITED(status)) {
            r->http_status = WEXITSTATUS(status);
            llm_finish(l, j, LLM_CMD_FAILED, "--llm-cmd: the command exited with status %d%s%.500s",
                   WEXITSTATUS(status), el ? ": " : "", err_tail);
        } else {
            r->http_status = -1;
            llm_finish(l, j, LLM_CMD_FAILED, "--llm-cmd: the command was killed by signal %d",
                   WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        }
        free(err_tail);
        return;
    }
    if (now >= j->deadline_ms) {
        llm_job_kill_cmd(j);
        j->res->reply = llm_redact(l, j->resp.s ? j->resp.s : "");
        llm_finish(l, j, LLM_TIMEOUT, "--llm-cmd: no answer within %.1f s; the command was killed", l->cfg.timeout_s);
    }
}

