/*
 * testdata: the files under tests/data for the unit tests, found through
 * $EVO_SOURCE_ROOT (meson's test environment) or the source tree the
 * build was configured from.
 */
#ifndef EVO_TESTDATA_H
#define EVO_TESTDATA_H

#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "device.h"
#include "task/task.h"
#include "util.h"

/* REL under the source tree (fresh string), e.g. "templates/attention". */
static inline char *test_source_path(const char *rel)
{
    const char *root = getenv("EVO_SOURCE_ROOT");
    return xasprintf("%s/%s", root && root[0] ? root : EVO_SOURCE_ROOT, rel);
}

/* tests/data/DIR/NAME (fresh string). */
static inline char *test_data_path(const char *dir, const char *name)
{
    char *rel = xasprintf("tests/data/%s/%s", dir, name), *path = test_source_path(rel);
    free(rel);
    return path;
}

/* The text of tests/data/DIR/NAME (fresh string), or "" after a message
 * on stderr when it cannot be read (the test's checks then fail). */
static inline char *test_data_load(const char *dir, const char *name)
{
    char *path = test_data_path(dir, name), *text = NULL;
    EvoErr err;
    if (file_read(path, &text, NULL, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        text = xstrdup("");
    }
    free(path);
    return text;
}

/* The task spec tests/data/DIR/NAME, loaded, and sm_90's device profile
 * in *dev; NULL after a message on stderr (the test's checks then fail). */
static inline Task *test_task_sm90(const char *dir, const char *name, DeviceInfo *dev)
{
    char *path = test_data_path(dir, name);
    Task *t = NULL;
    EvoErr err;
    if (device_profile("sm_90", dev, &err) < 0 || task_load(path, &t, &err) < 0)
        fprintf(stderr, "%s: %s\n", path, err.msg);
    free(path);
    return t;
}

/* rm -rf dir (a test's scratch directory); 0 on success. */
static inline int test_rmtree(const char *dir)
{
    char *cmd = xasprintf("rm -rf '%s'", dir);
    int rc = system(cmd);
    free(cmd);
    return rc;
}

#endif
