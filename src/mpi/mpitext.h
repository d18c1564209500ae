/*
 * mpitext: rank 0's copy of a child's rendered source in the MPI mode
 * (issue 32). A stage-A reply used to carry the child's benchmark-shape
 * source, tens of kB of JSON to encode, send and decode while the GPU
 * slot waits. Now an agent names the source by its sha256
 * (rec.source_hash) and rank 0 renders the same text from the task's
 * files and the child's params (mpieval_set_render), while the agent
 * gates it. Rank 0 keeps its render only when its hash is the agent's;
 * a render that differs (other template files on the agent's host) or
 * fails is no source at all: rank 0 then takes the agent's own text
 * (mpieval.c asks for it), checked against the same hash, and warns. So
 * the store holds the text that was compiled, byte for byte, or the run
 * fails with both hashes named.
 */
#ifndef EVO_MPI_MPITEXT_H
#define EVO_MPI_MPITEXT_H

#include "search/child.h"

/* Render child c's benchmark-shape source as the agents' evaluator does:
 * 0 with *text a fresh string (NULL: c has none), or -1 with err. Called
 * from rank 0's GPU threads at once: it must be thread safe. */
typedef int (*MpiRenderFn)(void *ctx, const Child *c, char **text, EvoErr *err);

/* One child's source at rank 0 (zeroed: nothing rendered, nothing held). */
typedef struct MpiText {
    int   rendered;   /* mpitext_render ran (text, or error) */
    char *text;       /* rank 0's render until the child takes it, or NULL */
    char  hash[65];   /* the render's sha256, "" when it failed */
    char *error;      /* why the render failed, or NULL */
    char  held[65];   /* sha256 of the child's source_text as settled, "" before */
} MpiText;

/* Render c into t with fn(ctx) (timed into *ms when not NULL), once: a
 * rendered t, or fn NULL, is left alone. */
void mpitext_render(MpiText *t, MpiRenderFn fn, void *ctx, const Child *c, double *ms);

/* After a reply that filled c->rec: make c->source_text the text
 * c->rec.source_hash names. sent: the text the reply carried (borrowed),
 * or NULL; it is taken only when it hashes to that name (an agent's
 * record can name the source another agent compiled: a child judged on
 * two hosts). Returns 0 when c has that text (nothing to do, the one
 * held, sent's, or rank 0's render taken now), 1 when only the agent
 * has it (no render, or a render of another hash: call mpitext_take with
 * the agent's text). */
int mpitext_settle(MpiText *t, Child *c, const char *sent);

/* Take text (borrowed), agent rank's source of c, as c->source_text. It
 * must hash to c->rec.source_hash: returns 0, or -1 with err naming the
 * rank and both hashes (NULL text: the agent has none). */
int mpitext_take(MpiText *t, Child *c, const char *text, int rank, EvoErr *err);

/* What rank 0 rendered, for a message: "sha256 HEX", or why it has none.
 * A fresh string. */
char *mpitext_describe(const MpiText *t);

/* Free what t holds and zero it. */
void mpitext_free(MpiText *t);

#endif
