/*
 * mpistat: where a request's time goes in the MPI mode (EVOENG_MPI_DEBUG=1).
 * Rank 0 and every agent keep, per request kind ("gate1", "compare", ...)
 * and per measure ("queued_ms", "agent_ms", ...), a count, a sum and a
 * maximum, and print them at the end as one JSON line on stderr:
 * {"mpi_debug": WHO, "rank": R, "extra": {...}, "ops": {OP: {MEASURE:
 * {"n", "sum", "mean", "max"}}}}. Without the variable every call is a
 * no-op on a NULL handle. Thread safe.
 */
#ifndef EVO_MPI_MPISTAT_H
#define EVO_MPI_MPISTAT_H

#include <jansson.h>

typedef struct MpiStat MpiStat;

/* A fresh table for who ("rank0", "agent") of rank, or NULL when
 * EVOENG_MPI_DEBUG is unset or 0. */
MpiStat *mpistat_new(const char *who, int rank);

/* A request's row name: its op, and the stage of a gate or a submit
 * ("gate1"); buf of n bytes, returned. */
const char *mpistat_name(json_t *req, char *buf, size_t n);

/* Add one value of measure to op's row. NULL s: nothing. */
void mpistat_add(MpiStat *s, const char *op, const char *measure, double v);

/* Print the line (extra, taken, may be NULL: more fields under "extra")
 * and free the table. NULL *s: nothing (extra is freed). */
void mpistat_close(MpiStat **s, json_t *extra);

#endif
