/*
 * mpieval: the Evaluator (search/child.h) of rank 0 in the MPI mode. Its slots
 * are the GPUs of the agent ranks (agent.h), numbered in rank order: rank
 * 1's slots first. Every operation is forwarded to the agent that owns the
 * child's slot as a JSON request (link.h) and its reply, carrying the full
 * result record, is copied back into the child.
 *
 * Threads: rank 0's GPU threads call gate, time and compare concurrently
 * for different slots. One communication thread makes every MPI call
 * (MPI_THREAD_SERIALIZED); the callers queue their request and wait on a
 * condition variable for its reply.
 *
 * Children: a child is submitted to a home agent (round robin) so its
 * compilation starts at once; a child judged on another agent's slot, and
 * a parent compared on another agent, are first sent there ("adopt") with
 * the stages they reached, and compiled there again. The kernel text
 * (custom_source) travels with the first message about a child to an
 * agent. release and drop are forwarded to every agent that holds it.
 *
 * Calibration runs on every agent, each normalising its own GPUs to its
 * first; latencies of different agents are not normalised to each other.
 *
 * A lost agent (silent past the timeout, EVOENG_MPI_TIMEOUT, default 60
 * s, ten times that before its hello) sets *stop, as SIGINT does, and
 * its requests return EVAL_RETRY: the loop stops taking children, the
 * children in flight are not committed, and the run ends "interrupted";
 * resume continues it.
 */
#ifndef EVO_MPI_MPIEVAL_H
#define EVO_MPI_MPIEVAL_H

#include "device.h"
#include "mpi/link.h"
#include "mpi/mpitext.h"
#include "search/evolve.h"

typedef struct MpiEval MpiEval;

/* Start the communication thread over l (rank 0 of at least 2), borrowed
 * until mpieval_close. stop: set when an agent is lost (may be NULL).
 * Returns 0 or -1 with err. */
int mpieval_open(MpiEval **out, MpiLink *l, volatile int *stop, EvoErr *err);
/* Send the setup (a JSON object text, handed to every agent) and wait for
 * every agent's hello; children have nparams params. Returns 0, or -1 with err naming the rank that
 * refused (its message) or was lost. */
int mpieval_start(MpiEval *m, const char *setup_json, int nparams, EvoErr *err);
/* Tell every agent to quit, stop the thread, free. NULL is fine. */
void mpieval_close(MpiEval **m);

/* Let rank 0 render each child's source itself with fn(ctx) (mpitext.h),
 * checked against the hash the agent that compiled it names, instead of
 * receiving it from that agent. Without it (NULL, the default) the agents
 * send their sources. Call before the run; ctx is borrowed until close. */
void mpieval_set_render(MpiEval *m, MpiRenderFn fn, void *ctx);

/* The Evaluator vtable; its context is the MpiEval. */
extern const EvaluatorOps mpieval_ops;

int mpieval_agents(const MpiEval *m);     /* agent ranks (size - 1) */
int mpieval_slots(const MpiEval *m);      /* slots over all agents (after start) */
/* Agent i's (0-based: rank i+1) local slots and its device (the hello's
 * DeviceInfo); NULL before start. */
int mpieval_agent_slots(const MpiEval *m, int i);
const DeviceInfo *mpieval_agent_device(const MpiEval *m, int i);
/* The first agent rank that was lost, or 0. */
int mpieval_lost(const MpiEval *m);

#endif
