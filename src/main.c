/*
 * evoeng: an evolutionary CUDA kernel optimizer. This file holds only
 * main(): parse the command line, dispatch, and make sure that output
 * errors (a full disk, a closed pipe) are not silent.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "compile/cserver.h"
#include "gpu/worker.h"
#include "msg.h"
#include "task/confine.h"

typedef EvoExit (*CmdFn)(const Settings *s);

static const struct {
    CmdId cmd;
    CmdFn fn;
} dispatch[] = {
    {CMD_RUN, cmd_run},         {CMD_RESUME, cmd_resume}, {CMD_STATUS, cmd_status},
    {CMD_TOP, cmd_top},         {CMD_LINEAGE, cmd_lineage}, {CMD_SHOW, cmd_show},
    {CMD_EXPORT, cmd_export},   {CMD_CHECK, cmd_check},   {CMD_BENCH, cmd_bench},
    {CMD_RUNS, cmd_runs},
    {CMD_REPORT, cmd_report},
    {CMD_INIT, cmd_init},
};

int main(int argc, char **argv)
{
    Settings s = {0};
    EvoErr err;
    EvoExit rc = EVO_EXIT_OK;
    int code;

    /* The hidden `evoeng __worker IN OUT`: the GPU worker process (worker.h),
     * dispatched before anything else starts. */
    if (worker_dispatch(argc, argv, &code))
        return code;
    /* `evoeng __compile IN OUT`: an NVRTC helper (compile/cserver.h) */
    if (cserver_dispatch(argc, argv, &code))
        return code;
    /* this binary's compile threads run NVRTC in helper processes: one
     * process uses only about 13 cores for NVRTC however many it has */
    const char *helpers = getenv("EVOENG_COMPILE_HELPERS");   /* 0: compile in this process */
    if (!helpers || strcmp(helpers, "0") != 0)
        cserver_enable("/proc/self/exe");
    /* --json before anything can fail: a usage error is JSON too */
    int json = 0;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        json |= strcmp(argv[i], "--json") == 0;
    if (json)
        msg_keep_errors();
    if (cli_parse(argc, argv, &s, &err) != 0) {
        errorf("%s", err.msg);
        rc = EVO_EXIT_USAGE;
        goto out;
    }
    msg_verbosity = s.quiet ? 0 : s.verbose ? 2 : 1;
    for (int i = 0; i < s.nallow; i++)   /* before any task is loaded: confine.h */
        if (confine_allow_dir(s.allow_paths[i], &err) != 0) {
            errorf("%s", err.msg);
            rc = EVO_EXIT_USAGE;
            goto out;
        }
    if (s.help) {
        cli_usage(stdout, s.cmd);
    } else if (s.version) {
        rc = cmd_version(&s);
    } else {
        for (size_t i = 0; i < sizeof(dispatch) / sizeof(dispatch[0]); i++)
            if (dispatch[i].cmd == s.cmd)
                rc = dispatch[i].fn(&s);
    }
out:
    if (json && !s.help)
        out_json_end(rc);
    if (fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0) {
        errorf("writing to standard output failed: %s", strerror(errno));
        if (rc == EVO_EXIT_OK)
            rc = EVO_EXIT_IO;
    }
    return rc;
}
