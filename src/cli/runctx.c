/*
 * runctx: task loading, cache location, cores. See runctx.h.
 */
#include "cli/runctx.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile/nvrtc.h"
#include "task/datadir.h"

char *runctx_task_file(const char *path)
{
    if (access(path, R_OK) == 0 || path[0] == '/')
        return xstrdup(path);
    /* Not run from the source tree: the data directories (installed, or
     * the source tree evoeng was built from). */
    char *alt = datadir_file(path);
    return alt ? alt : xstrdup(path);
}

EvoExit runctx_load_task(const Settings *s, Task **out)
{
    EvoErr err;
    const char *want = s->task ? s->task : RUNCTX_DEFAULT_TASK;
    char *path = runctx_task_file(want);
    int missing = want[0] != '/' && access(path, F_OK) != 0;
    int rc = task_load(path, out, &err);
    free(path);
    if (rc) {
        errorf("%s", err.msg);
        if (missing) {
            char *where = datadir_searched(want);
            errorf("%s%s", s->task ? "" : "(no --task given: the default task) ", where);
            free(where);
        }
        return EVO_EXIT_TASK;
    }
    for (int i = 0; i < s->ndims; i++) {
        if (task_set_dim(*out, s->dims[i].name, s->dims[i].value, &err)) {
            errorf("--dim %s=%lld: %s", s->dims[i].name, (long long)s->dims[i].value, err.msg);
            task_free(out);
            return EVO_EXIT_USAGE;
        }
    }
    if (s->profile && task_time_profiles(*out, s->profile, &err)) {
        errorf("--profile: %s", err.msg);
        task_free(out);
        return EVO_EXIT_USAGE;
    }
    return EVO_EXIT_OK;
}

char *runctx_cache_dir(void)
{
    const char *env = getenv("EVOENG_CACHE_DIR");
    if (env && *env)
        return xstrdup(env);
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && xdg[0] == '/')                     /* the XDG rule: relative values are ignored */
        return path_join(xdg, "evoeng");
    const char *home = getenv("HOME");
    if (home && home[0] == '/')
        return path_join(home, ".cache/evoeng");
    return NULL;
}

void runctx_set_cache(const Settings *s)
{
    (void)s;
    char *dir = runctx_cache_dir();
    if (dir)
        nvrtc_set_cache_dir(dir);
    else
        notef("no compile cache: neither EVOENG_CACHE_DIR, XDG_CACHE_HOME nor HOME is set");
    free(dir);
}
