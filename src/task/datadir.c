/*
 * datadir: where evoeng's data lives. See datadir.h.
 */
#include "task/datadir.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "util.h"

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

char *datadir_file(const char *rel)
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

char *datadir_searched(const char *rel)
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
