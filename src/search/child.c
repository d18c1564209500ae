/*
 * child: the revert rule and the tournament, a Child's storage, and one
 * child judged completely. See child.h.
 */
#include "search/child.h"

#include <stdlib.h>
#include <string.h>

int evolve_should_revert(double ratio, double threshold)
{
    return !(ratio <= 1.0 + threshold);   /* NaN reverts too */
}

int evolve_tournament(Rng *rng, int n, int k)
{
    int best = n;
    for (int i = 0; i < k; i++) {
        int x = (int)rng_below(rng, (uint64_t)n);
        if (x < best)
            best = x;
    }
    return best;
}

/* ---- children -------------------------------------------------------- */

int evolve_evaluate(const EvaluatorOps *ev, void *ctx, Child *kid, EvoErr *err)
{
    int rc;
    if ((rc = ev->submit(ctx, kid, 1, err)) || (rc = ev->gate(ctx, kid, 1, err)) ||
        (rc = ev->submit(ctx, kid, 2, err)) || (rc = ev->gate(ctx, kid, 2, err)) || (rc = ev->time(ctx, kid, err)))
        return rc;
    return 0;
}

void evolve_child_init(Child *c, int nparams)
{
    memset(c, 0, sizeof(*c));
    c->vals = xcalloc((size_t)nparams + 1, sizeof(int64_t));
    candidate_record_init(&c->rec);
    compile_record_init(&c->comp);
}

void evolve_child_clear(Child *c, const EvaluatorOps *ev, void *ev_ctx)
{
    if (c->priv && ev && ev->release)
        ev->release(ev_ctx, c);
    free(c->vals);
    free(c->params_key);
    free(c->source_text);
    free(c->own_source);
    candidate_record_free(&c->rec);
    compile_record_free(&c->comp);
    memset(c, 0, sizeof(*c));
}
