/*
 * agent: an evaluation agent of the MPI mode, every rank but 0. It serves
 * rank 0's requests (mpieval.h) over any local Evaluator (a GpuEval with
 * its own NVRTC pool and one worker per local GPU; the fake evaluator in
 * the tests): it keeps a mirror Child for every child rank 0 has sent
 * (by rank 0's id), runs submit, ready, drop and release on its main
 * thread, and gate, time, compare and calibrate on one thread per local
 * slot, so its GPUs work at once. Only the main thread calls MPI.
 */
#ifndef EVO_MPI_AGENT_H
#define EVO_MPI_AGENT_H

#include "mpi/link.h"
#include "search/evolve.h"

/* Wait for rank 0's setup message: *setup gets its JSON text (the caller
 * frees it), or NULL when rank 0 said quit before any setup. Returns 0, or
 * -1 with err (MPI failed, rank 0 lost). */
int agent_wait_setup(MpiLink *l, char **setup, EvoErr *err);

/* Tell rank 0 this agent could not start (msg is sent as the hello's
 * error), then wait for its quit. */
void agent_refuse(MpiLink *l, const char *msg);

/* Say hello (the local slots and device_hex, the local DeviceInfo as
 * hex) and serve requests until rank 0 says quit. *abandon is set to 1
 * when rank 0's quit says a rank was lost (then MPI_Finalize could wait
 * for it forever: pass it to mpilink_close). Returns 0 after a quit, or
 * -1 with err (rank 0 lost, MPI failed, a malformed request). */
int agent_serve(MpiLink *l, const EvaluatorOps *ev, void *ctx, int nparams, const char *device_hex, int *abandon,
                EvoErr *err);

#endif
