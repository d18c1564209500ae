/*
 * job: a request of the LLM client on its way, and its end: the record
 * filled, redacted and queued for llm_poll(). See job.h.
 */
#include "llm/job.h"

#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "llm/extract.h"
#include "msg.h"

/* Replace every occurrence of the key in s by [REDACTED] (fresh string). */
char *llm_redact(const Llm *l, const char *s)
{
    if (!s)
        return xstrdup("");
    if (!l->key || strlen(l->key) < 4)
        return xstrdup(s);
    StrBuf sb = {0};
    size_t kl = strlen(l->key);
    const char *p = s, *hit;
    while ((hit = strstr(p, l->key))) {
        sb_appendn(&sb, p, (size_t)(hit - p));
        sb_append(&sb, "[REDACTED]");
        p = hit + kl;
    }
    sb_append(&sb, p);
    return sb_take(&sb);
}

void llm_job_kill_cmd(Job *j)
{
    if (j->pid > 0) {
        kill(-j->pid, SIGKILL);
        kill(j->pid, SIGKILL);
        waitpid(j->pid, NULL, 0);
        j->pid = 0;
    }
    if (j->in_fd >= 0)
        close(j->in_fd);
    if (j->out_fd >= 0)
        close(j->out_fd);
    if (j->err_fd >= 0)
        close(j->err_fd);
    j->in_fd = j->out_fd = j->err_fd = -1;
}

/* ---- finishing -------------------------------------------------------- */

static void push_ready(Llm *l, LlmResult *r)
{
    if (l->nready == l->capready) {
        l->capready = l->capready ? 2 * l->capready : 8;
        l->ready = xrealloc(l->ready, (size_t)l->capready * sizeof *l->ready);
    }
    l->ready[l->nready++] = r;
}

/* Complete a job: fill the remaining record fields, move the record to
 * the ready queue. fmt == NULL means no error text. */
void llm_finish(Llm *l, Job *j, LlmStatus st, const char *fmt, ...)
{
    LlmResult *r = j->res;
    r->status = st;
    free(r->error);
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        char *msg = xvasprintf(fmt, ap);
        va_end(ap);
        r->error = llm_redact(l, msg);
        free(msg);
    } else {
        r->error = xstrdup("");
    }
#define FILL(f) if (!r->f) r->f = xstrdup("")
    FILL(reply); FILL(text); FILL(code); FILL(rationale); FILL(stop_reason);
#undef FILL
    if (j->state == JOB_RUNNING || j->state == JOB_WAITING) {
        l->slots_used--;
        r->latency_ms = time_now_ms() - j->start_ms;
    }
    if (st != LLM_OK)
        notef("llm: request %d (%s): %s: %s", j->id, r->provider, llm_status_name(st), r->error);
    j->state = JOB_DONE;
    push_ready(l, r);
    j->res = NULL;
}

/* The assistant text is in: extract the kernel and finish. */
void llm_finish_text(Llm *l, Job *j, const char *text)
{
    LlmResult *r = j->res;
    Extracted x;
    EvoErr e = {{0}};
    free(r->text);
    r->text = llm_redact(l, text);
    int rc = extract_reply(r->text, (const char *const *)j->entries, j->nentries, l->cfg.rationale_max, &x, &e);
    r->rationale = x.rationale;
    x.rationale = NULL;
    r->code = x.code ? x.code : xstrdup("");
    x.code = NULL;
    ExtractStatus xs = x.status;
    extract_free(&x);
    if (rc == 0) {
        llm_finish(l, j, LLM_OK, NULL);
        return;
    }
    LlmStatus st = xs == EXTRACT_MISSING_ENTRY ? LLM_MISSING_ENTRY
                 : xs == EXTRACT_HOST_CODE     ? LLM_HOST_CODE : LLM_NO_CODE;
    llm_finish(l, j, st, "%s", e.msg);
}
