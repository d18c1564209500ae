/*
 * runctx: task loading, cache location, cores. See runctx.h.
 */
#include "runctx.h"

#include <stdlib.h>
#include <unistd.h>

#include "config.h"
#include "nvrtc.h"

char *runctx_data_file(const char *rel)
{
    const char *env = getenv("EVOENG_DATA_DIR");
    const char *dirs[] = {env && env[0] ? env : NULL, EVO_DATADIR, EVO_SOURCE_ROOT};
    for (size_t i = 0; i < EVO_ARRAY_LEN(dirs); i++) {
        if (!dirs[i])
            continue;
        char *p = path_join(dirs[i], rel);
        if (access(p, R_OK) == 0)
            return p;
        free(p);
    }
    return NULL;
}

char *runctx_task_file(const char *path)
{
    if (access(path, R_OK) == 0 || path[0] == '/')
        return xstrdup(path);
    /* Not run from the source tree: the data directories (installed, or
     * the source tree evoeng was built from). */
    char *alt = runctx_data_file(path);
    return alt ? alt : xstrdup(path);
}

EvoExit runctx_load_task(const Settings *s, Task **out)
{
    EvoErr err;
    char *path = runctx_task_file(s->task ? s->task : RUNCTX_DEFAULT_TASK);
    int rc = task_load(path, out, &err);
    free(path);
    if (rc) {
        errorf("%s", err.msg);
        if (!s->task)
            errorf("(no --task given: the default task is %s, relative to the current directory)", RUNCTX_DEFAULT_TASK);
        return EVO_EXIT_TASK;
    }
    for (int i = 0; i < s->ndims; i++) {
        if (task_set_dim(*out, s->dims[i].name, s->dims[i].value, &err)) {
            errorf("--dim %s=%lld: %s", s->dims[i].name, (long long)s->dims[i].value, err.msg);
            task_free(out);
            return EVO_EXIT_USAGE;
        }
    }
    return EVO_EXIT_OK;
}

void runctx_set_cache(const Settings *s)
{
    const char *env = getenv("EVOENG_CACHE_DIR");
    if (env && *env) {
        nvrtc_set_cache_dir(env);
        return;
    }
    char *dir = path_dirname(s->db);
    char *cache = path_join(dir, "cache");
    nvrtc_set_cache_dir(cache);
    free(cache);
    free(dir);
}

int runctx_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}
