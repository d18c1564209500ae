/* runmpi: see runmpi.h. */
#include "cli/runmpi.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/runctx.h"
#include "compile/prep.h"
#include "device.h"
#include "gpu/gpueval.h"
#include "mpi/agent.h"
#include "mpi/link.h"
#include "mpi/mpieval.h"
#include "mpi/wire.h"

/* MPI is one per process: so is its session. */
static MpiLink *link_;
static MpiEval *eval_;

#define TIMEOUT_S 60.0
#define NOGPU_TAG "no usable GPU: "

/* The agent's settings from rank 0's setup (strings borrowed from o). */
static void settings_from_setup(Settings *s, json_t *o)
{
    s->task = json_string_value(json_object_get(o, "task"));
    s->profile = json_string_value(json_object_get(o, "profiles"));   /* run --profile; NULL: the task's */
    s->seeds = (int)json_integer_value(json_object_get(o, "seeds"));
    s->seed = (uint64_t)json_integer_value(json_object_get(o, "seed"));
    s->ndims = 0;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(o, "dims"), k, v) {
        if (s->ndims < CLI_MAX_DIMS) {
            snprintf(s->dims[s->ndims].name, sizeof(s->dims[0].name), "%s", k);
            s->dims[s->ndims++].value = json_integer_value(v);
        }
    }
}

/* An agent rank: set up from rank 0's setup, serve, quit (*abandon: see
 * agent_serve). */
static EvoExit agent_main(const Settings *given, int *abandon)
{
    EvoErr err;
    char *setup = NULL;
    if (agent_wait_setup(link_, &setup, &err)) {
        errorf("MPI rank %d: %s", mpilink_rank(link_), err.msg);
        return EVO_EXIT_FAIL;
    }
    if (!setup)   /* rank 0 stopped before the run started */
        return EVO_EXIT_OK;
    json_t *o = json_loads(setup, 0, NULL);
    free(setup);
    Settings s = *given;
    settings_from_setup(&s, o);
    Task *task = NULL;
    GpuEval *ge = NULL;
    EvoExit rc = runctx_load_task(&s, &task);
    if (rc != EVO_EXIT_OK) {
        agent_refuse(link_, "the task spec does not load on this host (see its stderr)");
        goto out;
    }
    runctx_set_cache(&s);
    GpuEvalOptions go = {.jobs = s.jobs, .verbose = s.verbose, .devices = s.gpus, .ndevices = s.ngpus,
                         .count = s.gpus_count};
    /* agents of one host share its cores: without -j, each compiles on
     * its share (one agent a GPU on an 8-GPU host: cores / 8 each) */
    if (go.jobs == 0) {
        int share = device_cores() / mpilink_local_agents(link_);
        go.jobs = share > 0 ? share : 1;
    }
    gate_options_default(&go.gate);
    go.gate.nseeds = s.seeds;
    bench_options_default(&go.bench);
    go.bench.seed = s.seed;
    int nogpu = 0;
    if (gpueval_open(&ge, task, &go, &nogpu, &err)) {
        char *m = xasprintf("%s%s", nogpu ? NOGPU_TAG : "", err.msg);
        agent_refuse(link_, m);
        free(m);
        rc = nogpu ? EVO_EXIT_NO_GPU : EVO_EXIT_TASK;
        goto out;
    }
    char *hex = wire_device_hex(gpueval_device(ge));
    if (agent_serve(link_, &gpueval_ops, ge, task_nparams(task), hex, abandon, &err)) {
        errorf("MPI rank %d: %s", mpilink_rank(link_), err.msg);
        rc = EVO_EXIT_FAIL;
    }
    free(hex);
out:
    gpueval_close(&ge);
    task_free(&task);
    json_decref(o);
    return rc;
}

int runmpi_enter(const Settings *s, volatile int *stop, EvoExit *rc)
{
    EvoErr err;
    if (!mpilink_launched())
        return 0;
    if (mpilink_open(&link_, TIMEOUT_S, &err)) {
        errorf("%s", err.msg);
        *rc = EVO_EXIT_FAIL;
        return 1;
    }
    if (mpilink_size(link_) < 2) {
        errorf("started by mpirun with 1 rank: an MPI run needs rank 0 (the orchestrator) and at least one "
               "agent rank (mpirun -np 2 or more); on one host without mpirun, use --gpus");
        mpilink_close(&link_, 0);
        *rc = EVO_EXIT_USAGE;
        return 1;
    }
    if (mpilink_rank(link_) != 0) {
        int abandon = 0;
        *rc = agent_main(s, &abandon);
        mpilink_close(&link_, abandon);
        return 1;
    }
    const char *rec = getenv("OMPI_MCA_orte_enable_recovery");
    if (getenv("OMPI_COMM_WORLD_SIZE") && !(rec && (strcmp(rec, "1") == 0 || strcmp(rec, "true") == 0)))
        warnf("mpirun without '--mca orte_enable_recovery 1': if an agent rank dies, mpirun also kills this "
              "orchestrator and the run stays 'running' (resume still continues it)");
    if (mpieval_open(&eval_, link_, stop, &err)) {
        errorf("%s", err.msg);
        mpilink_close(&link_, 0);
        *rc = EVO_EXIT_FAIL;
        return 1;
    }
    return 0;
}

int runmpi_active(void)
{
    return eval_ != NULL;
}

/* A child's benchmark-shape source as the agents' GpuEval renders it
 * (MpiRenderFn): rank 0 renders instead of receiving it. */
static int render_child(void *ctx, const Child *c, char **text, EvoErr *err)
{
    const Task *task = ctx;   /* rank 0's, which outlives the run's evaluator */
    PrepInput in = {.vals = c->vals, .custom_source = c->custom_source};
    return prep_render_source(task, &in, 0, text, err);
}

EvoExit runmpi_start(const Settings *s, const Task *task, const char *task_abs, const EvaluatorOps **ops,
                     void **ctx, const DeviceInfo **dev, int quiet)
{
    EvoErr err;
    json_t *dims = json_object();
    for (int i = 0; i < s->ndims; i++)
        json_object_set_new(dims, s->dims[i].name, json_integer(s->dims[i].value));
    json_t *o = json_pack("{s:s, s:o, s:i, s:I}", "task", task_abs, "dims", dims, "seeds", s->seeds, "seed",
                          (json_int_t)s->seed);
    if (s->profile)
        json_object_set_new(o, "profiles", json_string(s->profile));
    char *setup = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    int rc = mpieval_start(eval_, setup, task_nparams(task), &err);
    free(setup);
    if (rc) {
        errorf("%s", err.msg);
        return strstr(err.msg, NOGPU_TAG) ? EVO_EXIT_NO_GPU : EVO_EXIT_TASK;
    }
    *dev = mpieval_agent_device(eval_, 0);
    for (int a = 1; a < mpieval_agents(eval_); a++) {
        const DeviceInfo *d = mpieval_agent_device(eval_, a);
        if (strcmp(d->arch, (*dev)->arch) != 0) {   /* one compile target serves every agent */
            errorf("MPI rank %d has %s (%s), rank 1 %s (%s): the GPUs of a run must share one architecture",
                   a + 1, d->name, d->arch, (*dev)->name, (*dev)->arch);
            return EVO_EXIT_TASK;
        }
    }
    mpieval_set_render(eval_, render_child, (void *)task);
    *ops = &mpieval_ops;
    *ctx = eval_;
    for (int a = 0; a < mpieval_agents(eval_) && !quiet; a++) {
        const DeviceInfo *d = mpieval_agent_device(eval_, a);
        printf("  MPI rank %d: %d x %s (%s)\n", a + 1, mpieval_agent_slots(eval_, a), d->name, d->arch);
    }
    return EVO_EXIT_OK;
}

int runmpi_lost(void)
{
    return eval_ ? mpieval_lost(eval_) : 0;
}

void runmpi_leave(void)
{
    if (!link_)
        return;
    int lost = runmpi_lost();
    mpieval_close(&eval_);
    mpilink_close(&link_, lost);
}
