/*
 * abrepeat: statistics of repeated A/B comparisons. See abrepeat.h.
 */
#include "cli/abrepeat.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/bench.h"
#include "search/evolve.h"
#include "util.h"

void abrepeat_stats(const double *ratio, int n, double threshold, AbRepeatStats *out)
{
    memset(out, 0, sizeof(*out));
    out->median = out->min = out->max = out->p95_dev = out->max_dev = NAN;
    double *ok = xmalloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    double *dev = xmalloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    for (int i = 0; i < n; i++) {
        if (evolve_should_revert(ratio[i], threshold))
            out->reverts++;
        if (!isfinite(ratio[i])) {
            out->failed++;
            continue;
        }
        dev[out->n] = fabs(ratio[i] - 1.0);
        ok[out->n++] = ratio[i];
    }
    if (out->n > 0) {
        BenchStats st;
        bench_stats(ok, out->n, &st);
        out->median = st.median;
        out->min = st.min;
        out->max = st.max;
        out->p95_dev = bench_percentile(dev, out->n, 0.95);
        out->max_dev = fmax(fabs(st.min - 1.0), fabs(st.max - 1.0));
    }
    free(ok);
    free(dev);
}

int abrepeat_aa_pass(const AbRepeatStats *s, double p95_limit)
{
    return s->n > 0 && s->failed == 0 && s->reverts == 0 && s->p95_dev <= p95_limit;
}
