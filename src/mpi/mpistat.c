/* mpistat: see mpistat.h. */
#include "mpi/mpistat.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct MpiStat {
    pthread_mutex_t lock;
    char           *who;
    int             rank;
    json_t         *ops;   /* op -> measure -> [n, sum, max] */
};

MpiStat *mpistat_new(const char *who, int rank)
{
    const char *v = getenv("EVOENG_MPI_DEBUG");
    if (!v || !*v || strcmp(v, "0") == 0)
        return NULL;
    MpiStat *s = xcalloc(1, sizeof(*s));
    pthread_mutex_init(&s->lock, NULL);
    s->who = xstrdup(who);
    s->rank = rank;
    s->ops = json_object();
    return s;
}

const char *mpistat_name(json_t *req, char *buf, size_t n)
{
    const char *op = json_string_value(json_object_get(req, "op"));
    json_t *st = json_object_get(req, "stage");
    snprintf(buf, n, "%s", op ? op : "?");
    if (st && op && (strcmp(op, "gate") == 0 || strcmp(op, "submit") == 0))
        snprintf(buf, n, "%s%d", op, (int)json_integer_value(st));
    return buf;
}

void mpistat_add(MpiStat *s, const char *op, const char *measure, double v)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    json_t *o = json_object_get(s->ops, op);
    if (!o)
        json_object_set_new(s->ops, op, o = json_object());
    json_t *m = json_object_get(o, measure);
    if (!m)
        json_object_set_new(o, measure, m = json_pack("[i, f, f]", 0, 0.0, v));
    json_array_set_new(m, 0, json_integer(json_integer_value(json_array_get(m, 0)) + 1));
    json_array_set_new(m, 1, json_real(json_real_value(json_array_get(m, 1)) + v));
    if (v > json_real_value(json_array_get(m, 2)))
        json_array_set_new(m, 2, json_real(v));
    pthread_mutex_unlock(&s->lock);
}

void mpistat_close(MpiStat **sp, json_t *extra)
{
    MpiStat *s = *sp;
    if (!s) {
        json_decref(extra);
        return;
    }
    json_t *ops = json_object(), *o, *m;
    const char *op, *measure;
    json_object_foreach(s->ops, op, o) {
        json_t *row = json_object();
        json_object_foreach(o, measure, m) {
            json_int_t n = json_integer_value(json_array_get(m, 0));
            double sum = json_real_value(json_array_get(m, 1));
            json_object_set_new(row, measure, json_pack("{s:I, s:f, s:f, s:f}", "n", n, "sum", sum, "mean",
                                                        n ? sum / (double)n : 0.0, "max",
                                                        json_real_value(json_array_get(m, 2))));
        }
        json_object_set_new(ops, op, row);
    }
    json_t *line = json_pack("{s:s, s:i, s:o, s:o}", "mpi_debug", s->who, "rank", s->rank, "extra",
                             extra ? extra : json_object(), "ops", ops);
    char *text = json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(6));
    fprintf(stderr, "%s\n", text);
    free(text);
    json_decref(line);
    json_decref(s->ops);
    free(s->who);
    pthread_mutex_destroy(&s->lock);
    free(s);
    *sp = NULL;
}
