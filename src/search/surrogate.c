/*
 * surrogate: the random-forest model and its acquisition. See surrogate.h
 * for the model in plain words.
 *
 * Layout. Rows keep their features as uint16 ranks, row-major. A tree is a
 * flat array of nodes: an inner node sends "rank <= thr" to left and the
 * rest to left + 1; a leaf has feat == LEAF. Growing a tree works on an
 * array of row indices (the bootstrap sample) partitioned in place; the
 * best threshold of a feature in a node comes from one histogram of counts
 * and sums per value rank, so a node costs O(rows * features tried).
 */
#include "search/surrogate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LEAF 0xFFFFu

typedef struct Node {
    uint16_t feat;   /* param index, or LEAF */
    uint16_t thr;    /* rank <= thr goes left */
    int32_t  left;   /* index of the left child; the right one follows it */
    double   value;  /* leaf: mean target of its rows */
} Node;

typedef struct Tree {
    Node *nodes;
    int   n;
} Tree;

typedef struct Forest {
    Tree *trees;
    int   ntrees;    /* 0: not fitted (or no rows for it) */
} Forest;

struct Surrogate {
    int               np;        /* params */
    int              *nv;        /* values per param */
    int64_t         **sorted;    /* each param's values, ascending */
    SurrogateOptions  opt;
    /* rows */
    uint16_t         *x;         /* nrows * np ranks */
    double           *ylog;      /* log(latency_us); NAN for a failure */
    uint8_t          *status;    /* SurrogateStatus */
    int               nrows, cap, nok;
    double            best_log;
    /* last fit */
    Forest            reg;       /* log latency on ok rows */
    Forest            cls;       /* failure (0/1) on every row */
    int               fitted;
};

static const char *const status_names[SURR_NSTATUS] = {
    "ok", "invalid", "compile_error", "resource", "incorrect", "crashed", "timeout", "launch_error",
};

int surrogate_status_from_name(const char *name)
{
    for (int i = 0; name && i < SURR_NSTATUS; i++)
        if (strcmp(name, status_names[i]) == 0)
            return i;
    return -1;
}

const char *surrogate_status_name(SurrogateStatus st)
{
    return (int)st >= 0 && st < SURR_NSTATUS ? status_names[st] : "?";
}

void surrogate_options_default(SurrogateOptions *o)
{
    o->ntrees = 32;
    o->min_leaf = 2;
    o->max_depth = 24;
    o->feature_frac = 0.8;
}

/* ====================================================================== */
/* open, close, rows                                                       */
/* ====================================================================== */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int surrogate_open(Surrogate **out, int nparams, const int *nvalues, const int64_t *const *values,
                   const SurrogateOptions *opt, EvoErr *err)
{
    *out = NULL;
    SurrogateOptions o;
    if (opt)
        o = *opt;
    else
        surrogate_options_default(&o);
    if (nparams < 1 || nparams >= (int)LEAF)
        return err_set(err, "surrogate_open: %d params (expected 1..%u)", nparams, LEAF - 1);
    if (o.ntrees < 1 || o.ntrees > 4096 || o.min_leaf < 1 || o.max_depth < 1 ||
        !(o.feature_frac > 0 && o.feature_frac <= 1))
        return err_set(err, "surrogate_open: options out of range (ntrees %d, min_leaf %d, max_depth %d, "
                       "feature_frac %g)", o.ntrees, o.min_leaf, o.max_depth, o.feature_frac);
    for (int i = 0; i < nparams; i++)
        if (nvalues[i] < 1 || nvalues[i] > (int)LEAF - 1)
            return err_set(err, "surrogate_open: param %d has %d values (expected 1..%u)", i, nvalues[i],
                           LEAF - 1);
    Surrogate *s = xcalloc(1, sizeof(*s));
    s->np = nparams;
    s->opt = o;
    s->best_log = INFINITY;
    s->nv = xmalloc((size_t)nparams * sizeof(*s->nv));
    s->sorted = xcalloc((size_t)nparams, sizeof(*s->sorted));
    for (int i = 0; i < nparams; i++) {
        s->nv[i] = nvalues[i];
        s->sorted[i] = xmalloc((size_t)nvalues[i] * sizeof(int64_t));
        memcpy(s->sorted[i], values[i], (size_t)nvalues[i] * sizeof(int64_t));
        qsort(s->sorted[i], (size_t)nvalues[i], sizeof(int64_t), cmp_i64);
        for (int k = 1; k < nvalues[i]; k++)
            if (s->sorted[i][k] == s->sorted[i][k - 1]) {
                err_set(err, "surrogate_open: param %d lists the value %lld twice", i,
                        (long long)s->sorted[i][k]);
                surrogate_close(&s);
                return -1;
            }
    }
    *out = s;
    return 0;
}

int surrogate_open_task(Surrogate **out, const Task *t, const SurrogateOptions *opt, EvoErr *err)
{
    int np = task_nparams(t);
    if (np < 1) {
        *out = NULL;
        return err_set(err, "surrogate_open_task: task %s has no params", task_name(t));
    }
    int *nv = xmalloc((size_t)np * sizeof(*nv));
    int64_t **vals = xmalloc((size_t)np * sizeof(*vals));
    for (int i = 0; i < np; i++) {
        nv[i] = task_param_nvalues(t, i);
        vals[i] = xmalloc((size_t)(nv[i] > 0 ? nv[i] : 1) * sizeof(int64_t));
        for (int k = 0; k < nv[i]; k++)
            vals[i][k] = task_param_value(t, i, k);
    }
    int rc = surrogate_open(out, np, nv, (const int64_t *const *)vals, opt, err);
    for (int i = 0; i < np; i++)
        free(vals[i]);
    free(vals);
    free(nv);
    return rc;
}

static void forest_clear(Forest *f)
{
    for (int t = 0; t < f->ntrees; t++)
        free(f->trees[t].nodes);
    free(f->trees);
    f->trees = NULL;
    f->ntrees = 0;
}

void surrogate_close(Surrogate **sp)
{
    Surrogate *s = sp ? *sp : NULL;
    if (!s)
        return;
    for (int i = 0; i < s->np; i++)
        free(s->sorted[i]);
    free(s->sorted);
    free(s->nv);
    free(s->x);
    free(s->ylog);
    free(s->status);
    forest_clear(&s->reg);
    forest_clear(&s->cls);
    free(s);
    *sp = NULL;
}

/* Ranks of a configuration's values into r; -1 with err naming the first
 * value that is not in its param's list. */
static int to_ranks(const Surrogate *s, const int64_t *vals, uint16_t *r, EvoErr *err)
{
    for (int i = 0; i < s->np; i++) {
        const int64_t *hit = bsearch(&vals[i], s->sorted[i], (size_t)s->nv[i], sizeof(int64_t), cmp_i64);
        if (!hit)
            return err_set(err, "param %d: value %lld is not in its list", i, (long long)vals[i]);
        r[i] = (uint16_t)(hit - s->sorted[i]);
    }
    return 0;
}

int surrogate_add(Surrogate *s, const int64_t *vals, double latency_us, SurrogateStatus status, EvoErr *err)
{
    if ((int)status < 0 || status >= SURR_NSTATUS)
        return err_set(err, "surrogate_add: status %d out of range", (int)status);
    if (status == SURR_OK && !(isfinite(latency_us) && latency_us > 0))
        return err_set(err, "surrogate_add: latency %g us on an ok row (expected finite, > 0)", latency_us);
    if (s->nrows == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->x = xrealloc(s->x, (size_t)s->cap * (size_t)s->np * sizeof(*s->x));
        s->ylog = xrealloc(s->ylog, (size_t)s->cap * sizeof(*s->ylog));
        s->status = xrealloc(s->status, (size_t)s->cap * sizeof(*s->status));
    }
    if (to_ranks(s, vals, s->x + (size_t)s->nrows * (size_t)s->np, err) < 0)
        return err_prefix(err, "surrogate_add");
    double y = status == SURR_OK ? log(latency_us) : NAN;
    s->ylog[s->nrows] = y;
    s->status[s->nrows] = (uint8_t)status;
    s->nrows++;
    if (status == SURR_OK) {
        s->nok++;
        if (y < s->best_log)
            s->best_log = y;
    }
    return 0;
}

int surrogate_nobs(const Surrogate *s) { return s->nrows; }
int surrogate_nok(const Surrogate *s) { return s->nok; }
double surrogate_best_log(const Surrogate *s) { return s->best_log; }

/* ====================================================================== */
/* growing trees                                                           */
/* ====================================================================== */

/* Scratch shared by the nodes of one tree. */
typedef struct Grow {
    const Surrogate *s;
    const double    *y;       /* target per row */
    Rng              rng;
    int             *feats;   /* np: a permutation of the params */
    int              mtry;    /* features with a possible split to try per node */
    int             *cnt;     /* histogram over ranks: rows */
    double          *sum;     /* and sum of targets */
    int              maxnv;
    Tree            *tree;
    int              cap;
} Grow;

static int node_new(Grow *g)
{
    if (g->tree->n + 2 > g->cap) {
        g->cap = g->cap ? 2 * g->cap : 64;
        g->tree->nodes = xrealloc(g->tree->nodes, (size_t)g->cap * sizeof(Node));
    }
    return g->tree->n++;
}

/* Best split of rows idx[lo..hi) on feature f: returns the gain in
 * sum of squares (sumL^2/nL + sumR^2/nR - sum^2/n), or -1 when no split
 * leaves min_leaf rows on both sides. *thr gets the threshold: halfway
 * between the last rank on the left and the first on the right. */
static double best_split(Grow *g, const int *idx, int lo, int hi, int f, double total, uint16_t *thr)
{
    const Surrogate *s = g->s;
    int nv = s->nv[f], n = hi - lo, minl = s->opt.min_leaf;
    if (nv < 2)
        return -1;
    memset(g->cnt, 0, (size_t)nv * sizeof(*g->cnt));
    memset(g->sum, 0, (size_t)nv * sizeof(*g->sum));
    for (int i = lo; i < hi; i++) {
        int r = s->x[(size_t)idx[i] * (size_t)s->np + (size_t)f];
        g->cnt[r]++;
        g->sum[r] += g->y[idx[i]];
    }
    double best = -1, base = total * total / n, sl = 0;
    int nl = 0;
    for (int a = 0; a < nv - 1; a++) {
        if (!g->cnt[a])
            continue;
        nl += g->cnt[a];
        sl += g->sum[a];
        int b = a + 1;
        while (b < nv && !g->cnt[b])
            b++;
        if (b == nv)
            break;
        int nr = n - nl;
        if (nl < minl || nr < minl)
            continue;
        double sr = total - sl;
        double gain = sl * sl / nl + sr * sr / nr - base;
        if (gain > best) {
            best = gain;
            *thr = (uint16_t)((a + b - 1) / 2);
        }
    }
    return best;
}

/* Grow the subtree of rows idx[lo..hi) into node `at`. */
static void grow(Grow *g, int *idx, int lo, int hi, int depth, int at)
{
    const Surrogate *s = g->s;
    int n = hi - lo;
    double total = 0, lo_y = INFINITY, hi_y = -INFINITY;
    for (int i = lo; i < hi; i++) {
        double v = g->y[idx[i]];
        total += v;
        lo_y = v < lo_y ? v : lo_y;
        hi_y = v > hi_y ? v : hi_y;
    }
    Node *node = &g->tree->nodes[at];
    node->feat = LEAF;
    node->thr = 0;
    node->left = -1;
    node->value = total / n;
    if (n < 2 * s->opt.min_leaf || depth >= s->opt.max_depth || hi_y - lo_y <= 1e-12)
        return;

    /* Try features in a random order until mtry of them could split. */
    double best = 1e-12;
    int bf = -1, tried = 0;
    uint16_t bthr = 0;
    for (int k = 0; k < s->np && tried < g->mtry; k++) {
        int j = k + (int)rng_below(&g->rng, (uint64_t)(s->np - k));
        int f = g->feats[j];
        g->feats[j] = g->feats[k];
        g->feats[k] = f;
        uint16_t thr = 0;
        double gain = best_split(g, idx, lo, hi, f, total, &thr);
        if (gain < 0)
            continue;
        tried++;
        if (gain > best) {
            best = gain;
            bf = f;
            bthr = thr;
        }
    }
    if (bf < 0)
        return;

    /* Partition: ranks <= thr first. */
    int m = lo;
    for (int i = lo; i < hi; i++)
        if (s->x[(size_t)idx[i] * (size_t)s->np + (size_t)bf] <= bthr) {
            int t = idx[i];
            idx[i] = idx[m];
            idx[m++] = t;
        }
    int left = node_new(g);
    node_new(g);
    node = &g->tree->nodes[at];  /* node_new may have moved the array */
    node->feat = (uint16_t)bf;
    node->thr = bthr;
    node->left = left;
    grow(g, idx, lo, m, depth + 1, left);
    grow(g, idx, m, hi, depth + 1, left + 1);
}

/* Fit forest f on the rows listed in rows[0..n) with targets y (indexed
 * by row). Tree t bootstraps with rng_mix(seed, t). */
static void forest_fit(Surrogate *s, Forest *f, const int *rows, int n, const double *y, uint64_t seed)
{
    forest_clear(f);
    if (n == 0)
        return;
    Grow g = {.s = s, .y = y};
    g.feats = xmalloc((size_t)s->np * sizeof(int));
    g.mtry = (int)ceil(s->opt.feature_frac * s->np);
    if (g.mtry < 1)
        g.mtry = 1;
    for (int i = 0; i < s->np; i++)
        g.maxnv = s->nv[i] > g.maxnv ? s->nv[i] : g.maxnv;
    g.cnt = xmalloc((size_t)g.maxnv * sizeof(*g.cnt));
    g.sum = xmalloc((size_t)g.maxnv * sizeof(*g.sum));
    int *idx = xmalloc((size_t)n * sizeof(*idx));
    f->trees = xcalloc((size_t)s->opt.ntrees, sizeof(Tree));
    f->ntrees = s->opt.ntrees;
    for (int t = 0; t < f->ntrees; t++) {
        rng_seed(&g.rng, rng_mix(seed, (uint64_t)t));
        for (int i = 0; i < s->np; i++)
            g.feats[i] = i;
        for (int i = 0; i < n; i++)
            idx[i] = rows[rng_below(&g.rng, (uint64_t)n)];
        g.tree = &f->trees[t];
        g.cap = 0;
        node_new(&g);
        grow(&g, idx, 0, n, 0, 0);
    }
    free(idx);
    free(g.sum);
    free(g.cnt);
    free(g.feats);
}

int surrogate_fit(Surrogate *s, uint64_t seed, EvoErr *err)
{
    if (s->nrows == 0)
        return err_set(err, "surrogate_fit: no rows recorded");
    int *rows = xmalloc((size_t)s->nrows * sizeof(*rows));
    double *fail = xmalloc((size_t)s->nrows * sizeof(*fail));
    int nok = 0;
    for (int i = 0; i < s->nrows; i++) {
        fail[i] = s->status[i] == SURR_OK ? 0.0 : 1.0;
        if (s->status[i] == SURR_OK)
            rows[nok++] = i;
    }
    forest_fit(s, &s->reg, rows, nok, s->ylog, rng_mix(seed, 1));
    for (int i = 0; i < s->nrows; i++)
        rows[i] = i;
    forest_fit(s, &s->cls, rows, s->nrows, fail, rng_mix(seed, 2));
    free(fail);
    free(rows);
    s->fitted = 1;
    return 0;
}

/* ====================================================================== */
/* prediction and acquisition                                              */
/* ====================================================================== */

static double tree_eval(const Tree *t, const uint16_t *r)
{
    const Node *n = &t->nodes[0];
    while (n->feat != LEAF)
        n = &t->nodes[n->left + (r[n->feat] > n->thr)];
    return n->value;
}

/* Mean and standard deviation over the trees of f at ranks r. */
static void forest_eval(const Forest *f, const uint16_t *r, double *mean, double *sd)
{
    double sum = 0, sq = 0;
    for (int t = 0; t < f->ntrees; t++) {
        double v = tree_eval(&f->trees[t], r);
        sum += v;
        sq += v * v;
    }
    double m = sum / f->ntrees, var = sq / f->ntrees - m * m;
    *mean = m;
    *sd = var > 0 ? sqrt(var) : 0;
}

int surrogate_predict(const Surrogate *s, const int64_t *vals, double *mean_log, double *stddev,
                      double *p_fail, EvoErr *err)
{
    if (!s->fitted)
        return err_set(err, "surrogate_predict: the model was never fitted");
    uint16_t stackr[64], *r = s->np <= 64 ? stackr : xmalloc((size_t)s->np * sizeof(*r));
    int rc = to_ranks(s, vals, r, err);
    if (rc < 0) {
        err_prefix(err, "surrogate_predict");
    } else {
        double m = NAN, sd = NAN, pf = 0, pfsd;
        if (s->reg.ntrees)
            forest_eval(&s->reg, r, &m, &sd);
        forest_eval(&s->cls, r, &pf, &pfsd);
        if (mean_log)
            *mean_log = m;
        if (stddev)
            *stddev = sd;
        if (p_fail)
            *p_fail = pf < 0 ? 0 : pf > 1 ? 1 : pf;
    }
    if (r != stackr)
        free(r);
    return rc;
}

/* EI * (1 - p_fail) from a prediction; the formula is in surrogate.h. */
static double acquire(double mean, double sd, double pf, double best_log, double xi)
{
    if (isnan(mean) || !isfinite(best_log))
        return 1 - pf;
    double d = best_log - xi - mean, ei;
    if (sd > 0) {
        double z = d / sd;
        ei = d * 0.5 * erfc(-z / sqrt(2.0)) + sd * exp(-0.5 * z * z) * 0.39894228040143268 /* 1/sqrt(2 pi) */;
    } else {
        ei = d > 0 ? d : 0;
    }
    return (ei > 0 ? ei : 0) * (1 - pf);
}

double surrogate_score(const Surrogate *s, const int64_t *vals, double best_log, double xi, EvoErr *err)
{
    double m, sd, pf;
    if (surrogate_predict(s, vals, &m, &sd, &pf, err) < 0)
        return -1;
    return acquire(m, sd, pf, best_log, xi);
}

typedef struct Cand {
    double key;    /* sort key, higher first */
    double mean;   /* tie-break, lower first */
    int    i;
} Cand;

static int cmp_cand(const void *a, const void *b)
{
    const Cand *x = a, *y = b;
    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    if (x->mean != y->mean && !isnan(x->mean) && !isnan(y->mean))
        return x->mean < y->mean ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

int surrogate_rank(const Surrogate *s, const int64_t *cands, int ncands, double best_log,
                   const SurrogatePick *pick, int k, int *out, EvoErr *err)
{
    SurrogatePick p = {.xi = 0.01, .epsilon = 0.25, .explore = SURR_EXPLORE_UNCERTAIN, .seed = 0};
    if (pick)
        p = *pick;
    if (ncands < 0 || k < 0 || !(p.epsilon >= 0 && p.epsilon <= 1) || !(p.xi >= 0) ||
        (p.explore != SURR_EXPLORE_UNCERTAIN && p.explore != SURR_EXPLORE_RANDOM))
        return err_set(err, "surrogate_rank: arguments out of range (ncands %d, k %d, epsilon %g, xi %g)",
                       ncands, k, p.epsilon, p.xi);
    if (k > ncands)
        k = ncands;
    if (k == 0)
        return 0;
    Cand *c = xmalloc((size_t)ncands * sizeof(*c));
    double *unc = xmalloc((size_t)ncands * sizeof(*unc));
    for (int i = 0; i < ncands; i++) {
        double m, sd, pf;
        if (surrogate_predict(s, cands + (size_t)i * (size_t)s->np, &m, &sd, &pf, err) < 0) {
            err_prefix(err, "surrogate_rank: candidate %d", i);
            free(unc);
            free(c);
            return -1;
        }
        c[i] = (Cand){acquire(m, sd, pf, best_log, p.xi), m, i};
        unc[i] = (isnan(sd) ? 1 : sd) * (1 - pf);
    }
    int nexp = (int)floor(p.epsilon * k + 0.5), nexploit = k - nexp;
    qsort(c, (size_t)ncands, sizeof(*c), cmp_cand);
    for (int j = 0; j < nexploit; j++)
        out[j] = c[j].i;
    /* The rest, c[nexploit..ncands), are open for exploration. */
    int rest = ncands - nexploit;
    Cand *r = c + nexploit;
    if (p.explore == SURR_EXPLORE_UNCERTAIN) {
        for (int j = 0; j < rest; j++)
            r[j] = (Cand){unc[r[j].i], r[j].mean, r[j].i};
        qsort(r, (size_t)rest, sizeof(*r), cmp_cand);
    } else {
        Rng rng;
        rng_seed(&rng, p.seed);
        for (int j = 0; j < nexp; j++) {
            int q = j + (int)rng_below(&rng, (uint64_t)(rest - j));
            Cand t = r[j];
            r[j] = r[q];
            r[q] = t;
        }
    }
    for (int j = 0; j < nexp; j++)
        out[nexploit + j] = r[j].i;
    free(unc);
    free(c);
    return k;
}
