/*
 * runctx: task loading, cache location, cores. See runctx.h.
 */
#include "cli/runctx.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile/nvrtc.h"
#include "config.h"

/* The data directories in search order, each with what it is; fresh
 * paths in dirs[0..n). */
static int data_dirs(char *dirs[4], const char *what[4])
{
    int n = 0;
    const char *env = getenv("EVOENG_DATA_DIR");
    if (env && env[0]) {
        what[n] = "$EVOENG_DATA_DIR";
        dirs[n++] = xstrdup(env);
    }
    /* beside the binary: <prefix>/bin/evoeng -> <prefix>/share/evoeng, so a
     * tree installed with --destdir or moved elsewhere finds its data */
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *bin = path_dirname(exe), *prefix = path_dirname(bin);
        char *share = path_join(prefix, "share/evoeng");
        if (strcmp(share, EVO_DATADIR) != 0) {
            what[n] = "beside the binary";
            dirs[n++] = share;
        } else {
            free(share);
        }
        free(bin);
        free(prefix);
    }
    what[n] = "where meson install puts it";
    dirs[n++] = xstrdup(EVO_DATADIR);
    what[n] = "the source tree evoeng was built from";
    dirs[n++] = xstrdup(EVO_SOURCE_ROOT);
    return n;
}

char *runctx_data_file(const char *rel)
{
    char *dirs[4];
    const char *what[4];
    int n = data_dirs(dirs, what);
    char *found = NULL;
    for (int i = 0; i < n; i++) {
        char *p = path_join(dirs[i], rel);
        if (!found && access(p, R_OK) == 0)
            found = p;
        else
            free(p);
        free(dirs[i]);
    }
    return found;
}

char *runctx_data_searched(const char *rel)
{
    char *dirs[4];
    const char *what[4];
    int n = data_dirs(dirs, what);
    StrBuf sb = {0};
    sb_printf(&sb, "%s is in none of the places searched: ./%s (the current directory)", rel, rel);
    if (!getenv("EVOENG_DATA_DIR") || !getenv("EVOENG_DATA_DIR")[0])
        sb_append(&sb, ", $EVOENG_DATA_DIR (not set)");
    for (int i = 0; i < n; i++) {
        sb_printf(&sb, ", %s/%s (%s)", dirs[i], rel, what[i]);
        free(dirs[i]);
    }
    sb_append(&sb, "; set EVOENG_DATA_DIR to the folder that holds templates/ and prompts/");
    return sb_take(&sb);
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
    const char *want = s->task ? s->task : RUNCTX_DEFAULT_TASK;
    char *path = runctx_task_file(want);
    int missing = want[0] != '/' && access(path, F_OK) != 0;
    int rc = task_load(path, out, &err);
    free(path);
    if (rc) {
        errorf("%s", err.msg);
        if (missing) {
            char *where = runctx_data_searched(want);
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

int runctx_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}
