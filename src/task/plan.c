/*
 * plan: freeing plans and dtype helpers. See plan.h.
 */
#include "task/plan.h"

#include <stdlib.h>
#include <string.h>

static void launches_free(PlanLaunch *l, int n)
{
    for (int i = 0; i < n; i++) {
        free(l[i].entry);
        free(l[i].args);
    }
    free(l);
}

void plan_free(Plan *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->nbuffers; i++)
        free(p->buffers[i].name);
    free(p->buffers);
    for (int k = 0; k < p->nprofiles; k++) {
        free(p->profiles[k].name);
        free(p->profiles[k].init);
    }
    free(p->profiles);
    launches_free(p->launches, p->nlaunches);
    launches_free(p->ref_launches, p->nref_launches);
    free(p->shape_label);
    memset(p, 0, sizeof(*p));
}

int plan_nprofiles(const Plan *p)
{
    return p->nprofiles > 0 ? p->nprofiles : 1;
}

const char *plan_profile_name(const Plan *p, int k)
{
    return p->nprofiles > 0 && k >= 0 && k < p->nprofiles ? p->profiles[k].name : "default";
}

int plan_profile_timing(const Plan *p, int k)
{
    return p->nprofiles > 0 && k >= 0 && k < p->nprofiles ? p->profiles[k].timing : k == 0;
}

const InitSpec *plan_init(const Plan *p, int k, int b)
{
    if (p->nprofiles > 0 && k >= 0 && k < p->nprofiles)
        return &p->profiles[k].init[b];
    return &p->buffers[b].init;
}

unsigned plan_timing_mask(const Plan *p)
{
    unsigned m = 0;
    for (int k = 0; k < plan_nprofiles(p); k++)
        if (plan_profile_timing(p, k))
            m |= 1u << k;
    return m;
}

const char *const init_kind_names[] = {"normal", "uniform", "zero", "const", "outlier", NULL};
const char *const row_scale_names[] = {"none", "lognormal", "uniform", NULL};

static const char *const dtype_names[] = {"f16", "bf16", "f32", "i32"};

int dtype_size(DType t)
{
    return t == DT_F16 || t == DT_BF16 ? 2 : 4;
}

const char *dtype_name(DType t)
{
    return (unsigned)t < 4 ? dtype_names[t] : "?";
}

int dtype_parse(const char *s)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(s, dtype_names[i]) == 0)
            return i;
    return -1;
}

const char *const tmap_swizzle_names[] = {"none", "32B", "64B", "128B", NULL};
const char *const tmap_l2_names[] = {"none", "64B", "128B", "256B", NULL};

int tmap_name_index(const char *const *names, const char *s)
{
    for (int i = 0; s && names[i]; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return -1;
}
