/* mpitext: see mpitext.h. */
#include "mpi/mpitext.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mpitext_render(MpiText *t, MpiRenderFn fn, void *ctx, const Child *c, double *ms)
{
    if (t->rendered || !fn)
        return;
    double t0 = time_now_ms();
    EvoErr err = {{0}};
    t->rendered = 1;
    if (fn(ctx, c, &t->text, &err)) {
        free(t->text);
        t->text = NULL;
        t->error = xstrdup(err.msg);
    } else if (!t->text) {
        t->error = xstrdup("the child has no source there");
    } else {
        sha256_hex(t->text, strlen(t->text), t->hash);
    }
    if (ms)
        *ms = time_now_ms() - t0;
}

/* text (borrowed), whose sha256 is hex, becomes c's source. */
static void hold_copy(MpiText *t, Child *c, const char *text, const char hex[65])
{
    free(c->source_text);
    c->source_text = xstrdup(text);
    memcpy(t->held, hex, sizeof(t->held));
}

int mpitext_settle(MpiText *t, Child *c, const char *sent)
{
    const char *want = c->rec.source_hash;
    if (!want || !*want)
        return 0;   /* no source (an invalid child) */
    if (sent) {   /* the agent's text: taken when it is the one its record names */
        char hex[65];
        sha256_hex(sent, strlen(sent), hex);
        if (strcmp(hex, want) == 0) {
            hold_copy(t, c, sent, hex);
            return 0;
        }
    }
    if (c->source_text && strcmp(t->held, want) == 0)
        return 0;
    if (t->text && strcmp(t->hash, want) == 0) {
        free(c->source_text);
        c->source_text = t->text;
        t->text = NULL;
        snprintf(t->held, sizeof(t->held), "%s", want);
        return 0;
    }
    return 1;
}

int mpitext_take(MpiText *t, Child *c, const char *text, int rank, EvoErr *err)
{
    const char *want = c->rec.source_hash ? c->rec.source_hash : "";
    if (!text)
        return err_set(err, "MPI rank %d: no source text for %s, whose record names sha256 %s", rank,
                       c->params_key ? c->params_key : "a child", want);
    char hex[65];
    sha256_hex(text, strlen(text), hex);
    if (strcmp(hex, want) != 0)
        return err_set(err, "MPI rank %d: the source text it sent for %s has sha256 %s, not %s as its record says",
                       rank, c->params_key ? c->params_key : "a child", hex, want);
    hold_copy(t, c, text, hex);
    return 0;
}

char *mpitext_describe(const MpiText *t)
{
    if (t->hash[0])
        return xasprintf("sha256 %s", t->hash);
    return xasprintf("no source (%s)", t->error ? t->error : "not rendered");
}

void mpitext_free(MpiText *t)
{
    free(t->text);
    free(t->error);
    memset(t, 0, sizeof(*t));
}
