/*
 * runmpi: `mpirun -np N evoeng run|resume ...` (issue 15 part 2). Every
 * rank parses the same command line. Rank 0 is the orchestrator: the
 * loop, the store (its only writer) and the LLM client, with mpieval.h as
 * its Evaluator. Every other rank is an agent (agent.h): it waits for rank
 * 0's setup (the task spec's absolute path, its dims, seeds and seed;
 * the spec must be at that path on every host), opens its own GpuEval on
 * its local GPUs (--gpus), and serves until rank 0 says quit. Built only
 * with MPI (EVO_HAVE_MPI).
 */
#ifndef EVO_MPI_RUNMPI_H
#define EVO_MPI_RUNMPI_H

#include "cli/cli.h"
#include "device.h"
#include "msg.h"
#include "search/evolve.h"

/* Called first by run and resume. Returns 0 when the process was not
 * started by mpirun (single host: go on as usual) or is rank 0 (go on:
 * runmpi_active() is 1 and the evaluator comes from runmpi_start()).
 * Returns 1 with *rc when the command is done here: an agent rank that
 * served its run (EVO_EXIT_OK) or failed, or a usage error (mpirun -np 1).
 * stop is set when an agent is lost. */
int runmpi_enter(const Settings *s, volatile int *stop, EvoExit *rc);
/* 1 on rank 0 of an MPI run. */
int runmpi_active(void);
/* Rank 0: send the setup for task (loaded from task_abs with s's dims and
 * seeds) and wait for every agent: *ops, *ctx and *dev (the first agent's
 * GPU) for evolve_run. Returns EVO_EXIT_OK, or an exit code after a
 * message (an agent that found no GPU: EVO_EXIT_NO_GPU; another refusal,
 * or agents whose GPUs differ in architecture: EVO_EXIT_TASK). */
EvoExit runmpi_start(const Settings *s, const Task *task, const char *task_abs, const EvaluatorOps **ops,
                     void **ctx, const DeviceInfo **dev, int quiet);
/* The first agent rank lost during the run, or 0. */
int runmpi_lost(void);
/* Rank 0: tell the agents to quit (also when runmpi_start never ran) and
 * finalize MPI. Nothing without an MPI run. */
void runmpi_leave(void);

#endif
