/*
 * harness: the standalone check-and-time program of `evoeng export
 * --format harness` (see harness.h). The fixed parts of the program are the
 * text constants of harness_text.c; the rest (buffers, tensor maps, the two launch
 * plans) is written from the resolved Plan. The input generator is a copy
 * of the gate's (src/gpu/devkern.c evo_fill, src/gpu/gen.c gate_seed_key
 * and the buffers' seed_salt from the Plan): keep the two in step (the
 * export_nvcc test builds it into a host program and compares its values
 * with the gate's bit for bit).
 */
#include "export/harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "export/harness_text.h"

/* ---- generation --------------------------------------------------------- */

static const char *const dtype_enum[] = {"F16", "BF16", "F32", "I32"};
static const char *const init_enum[] = {"GEN_NORMAL", "GEN_UNIFORM", "GEN_ZERO", "GEN_CONST", "GEN_OUTLIER"};
static const char *const rows_enum[] = {"GEN_ROWS_NONE", "GEN_ROWS_LOGNORMAL", "GEN_ROWS_UNIFORM"};
static const char *const role_enum[] = {"INPUT", "OUTPUT", "SCRATCH"};
static const char *const tmap_type[] = {"CU_TENSOR_MAP_DATA_TYPE_FLOAT16", "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16",
                                        "CU_TENSOR_MAP_DATA_TYPE_FLOAT32", "CU_TENSOR_MAP_DATA_TYPE_INT32"};
static const char *const tmap_swizzle[] = {"CU_TENSOR_MAP_SWIZZLE_NONE", "CU_TENSOR_MAP_SWIZZLE_32B",
                                           "CU_TENSOR_MAP_SWIZZLE_64B", "CU_TENSOR_MAP_SWIZZLE_128B"};
static const char *const tmap_l2[] = {"CU_TENSOR_MAP_L2_PROMOTION_NONE", "CU_TENSOR_MAP_L2_PROMOTION_L2_64B",
                                      "CU_TENSOR_MAP_L2_PROMOTION_L2_128B", "CU_TENSOR_MAP_L2_PROMOTION_L2_256B"};

/* A floating-point literal for v: "0.125", "1.0", "1e-05"; with f32 the
 * float suffix. Non-finite values use the compiler's builtins (the macros
 * INFINITY and NAN may have been #undef'd with the kernel's macros). */
static void put_real(StrBuf *sb, double v, int f32)
{
    char num[64];
    if (isnan(v) || isinf(v)) {
        sb_printf(sb, "%s__builtin_%s%s", v < 0 ? "-" : "", isnan(v) ? "nan" : "inf", isnan(v) ? "(\"\")" : "()");
        return;
    }
    snprintf(num, sizeof(num), f32 ? "%.9g" : "%.17g", v);
    sb_append(sb, num);
    if (!strpbrk(num, ".e"))
        sb_append(sb, ".0");
    if (f32)
        sb_putc(sb, 'f');
}

/* `#line N "file"` naming the line after it, so compiler messages about the
 * harness's own code point at the harness's lines again. */
static void put_line_directive(StrBuf *sb, const char *file)
{
    size_t n = 0;
    for (size_t i = 0; i < sb->len; i++)
        n += sb->s[i] == '\n';
    sb_printf(sb, "#line %zu \"%s\"\n", n + 2, file);
}

static void put_text(StrBuf *sb, const char *text)
{
    sb_append(sb, text);
    if (!*text || text[strlen(text) - 1] != '\n')
        sb_putc(sb, '\n');
}

/* The reference inside namespace evo_ref; its #include lines go above the
 * namespace (a header included inside a namespace breaks), each replaced
 * by a comment so that line numbers stay. */
static void put_reference(StrBuf *sb, const char *ref)
{
    StrBuf body = {0};
    for (const char *line = ref; line && *line;) {
        const char *nl = strchr(line, '\n'), *p = line;
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        while (*p == ' ' || *p == '\t')
            p++;
        int inc = *p == '#';
        if (inc) {
            p++;
            while (*p == ' ' || *p == '\t')
                p++;
            inc = strncmp(p, "include", 7) == 0;
        }
        if (inc) {
            sb_appendn(sb, line, n);
            sb_putc(sb, '\n');
            sb_append(&body, "// (moved above namespace evo_ref) ");
        }
        sb_appendn(&body, line, n);
        sb_putc(&body, '\n');
        line = nl ? nl + 1 : NULL;
    }
    sb_append(sb, "namespace evo_ref {\n");
    sb_append(sb, body.s ? body.s : "");
    sb_append(sb, "} // namespace evo_ref\n");
    sb_free(&body);
}

/* The kernel's name as the host code spells it. */
static void put_kernel(StrBuf *sb, const char *entry, int reference)
{
    sb_append(sb, reference ? "::evo_ref" : "");
    sb_append(sb, strncmp(entry, "::", 2) == 0 ? "" : "::");
    sb_append(sb, entry);
}

static int has_tmaps(const Plan *p)
{
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < (r ? p->nref_launches : p->nlaunches); i++) {
            const PlanLaunch *l = r ? &p->ref_launches[i] : &p->launches[i];
            for (int a = 0; a < l->nargs; a++)
                if (l->args[a].kind == ARG_TMAP)
                    return 1;
        }
    return 0;
}

static void put_buffers(StrBuf *sb, const Plan *p)
{
    sb_append(sb, "enum BufferIndex {");
    for (int b = 0; b < p->nbuffers; b++)
        sb_printf(sb, "%s BUF_%s", b ? "," : "", p->buffers[b].name);
    sb_append(sb, " };\n\n// name, dtype, count, role, {kind, rows, a, b, p, c, ra, rb, row_len}, salt, atol, rtol\n"
                  "static Buffer buf[] = {\n");
    for (int b = 0; b < p->nbuffers; b++) {
        const PlanBuffer *pb = &p->buffers[b];
        const InitSpec *g = &pb->init;
        const double f[] = {g->a, g->b, g->p, g->c, g->ra, g->rb};
        sb_printf(sb, "    {\"%s\", %s, %llu, %s, {%s, %s", pb->name, dtype_enum[pb->dtype],
                  (unsigned long long)pb->count, role_enum[pb->role], init_enum[g->kind], rows_enum[g->rows]);
        for (size_t k = 0; k < EVO_ARRAY_LEN(f); k++) {
            sb_append(sb, ", ");
            put_real(sb, f[k], 0);
        }
        sb_printf(sb, ", %lluull}, 0x%016llxull, ", (unsigned long long)(g->row_len ? g->row_len : 1),
                  (unsigned long long)pb->seed_salt);
        put_real(sb, pb->atol, 0);
        sb_append(sb, ", ");
        put_real(sb, pb->rtol, 0);
        sb_append(sb, ", nullptr, nullptr},\n");
    }
    sb_append(sb, "};\nstatic const int NBUF = sizeof(buf) / sizeof(buf[0]);\n\n");
}

/* make_tensor_maps(): one encode per tensor-map argument, numbered in the
 * order run_reference() then run_candidate() use them. */
static void put_tmaps(StrBuf *sb, const Plan *p, int ntmaps)
{
    if (!ntmaps) {
        sb_append(sb, "// This plan passes no tensor maps.\nstatic void make_tensor_maps()\n{\n}\n\n");
        return;
    }
    sb_append(sb, text_tmap);
    sb_printf(sb, "// The tensor maps the launches take by value.\nstatic CUtensorMap tmap[%d];\n\n", ntmaps);
    sb_append(sb, "static void make_tensor_maps()\n{\n");
    int k = 0;
    for (int r = 1; r >= 0; r--)
        for (int i = 0; i < (r ? p->nref_launches : p->nlaunches); i++) {
            const PlanLaunch *l = r ? &p->ref_launches[i] : &p->launches[i];
            for (int a = 0; a < l->nargs; a++) {
                const PlanArg *g = &l->args[a];
                const PlanTmap *t = &g->tmap;
                if (g->kind != ARG_TMAP)
                    continue;
                const char *name = p->buffers[g->buffer].name;
                sb_printf(sb, "    // %s launch %d (%s), argument %d: %s\n    {\n        const cuuint64_t dims[] = {",
                          r ? "reference" : "candidate", i + 1, l->entry, a + 1, name);
                for (int d = 0; d < t->rank; d++)
                    sb_printf(sb, "%s%llu", d ? ", " : "", (unsigned long long)t->dims[d]);
                if (t->rank > 1) {
                    sb_append(sb, "};\n        const cuuint64_t strides[] = {");
                    for (int d = 0; d < t->rank - 1; d++)
                        sb_printf(sb, "%s%llu", d ? ", " : "", (unsigned long long)t->strides[d]);
                    sb_append(sb, "}; // bytes, of dims 1..\n");
                } else {
                    sb_append(sb, "};\n        const cuuint64_t *strides = nullptr;\n");
                }
                sb_append(sb, "        const cuuint32_t box[] = {");
                for (int d = 0; d < t->rank; d++)
                    sb_printf(sb, "%s%u", d ? ", " : "", t->box[d]);
                sb_append(sb, "}, elem_strides[] = {");
                for (int d = 0; d < t->rank; d++)
                    sb_printf(sb, "%s%u", d ? ", " : "", t->elem_strides[d] ? t->elem_strides[d] : 1);
                sb_printf(sb, "};\n        encode_tmap(&tmap[%d], \"%s\", %s, buf[BUF_%s].%s, %d, dims, strides, box, "
                              "elem_strides,\n                    %s, %s,\n                    %s);\n    }\n",
                          k++, name, tmap_type[p->buffers[g->buffer].dtype], name,
                          r && p->buffers[g->buffer].role != ROLE_INPUT ? "ref" : "cand", t->rank,
                          tmap_swizzle[t->swizzle & 3], tmap_l2[t->l2_promotion & 3],
                          t->oob_nan ? "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA"
                                     : "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE");
            }
        }
    sb_append(sb, "}\n\n");
}

/* set_smem_limits(): the opt-in for each kernel launched with over 48 KiB
 * of dynamic shared memory (its largest launch). */
static void put_smem_limits(StrBuf *sb, const Plan *p)
{
    sb_append(sb, "// Kernels launched with over 48 KiB of dynamic shared memory must opt in.\n"
                  "static void set_smem_limits()\n{\n");
    for (int r = 1; r >= 0; r--) {
        int n = r ? p->nref_launches : p->nlaunches;
        const PlanLaunch *ls = r ? p->ref_launches : p->launches;
        for (int i = 0; i < n; i++) {
            unsigned most = 0;
            int first = 1;
            for (int j = 0; j < n; j++) {
                if (strcmp(ls[j].entry, ls[i].entry) == 0) {
                    first &= j >= i;
                    most = ls[j].smem > most ? ls[j].smem : most;
                }
            }
            if (!first || most <= 48 * 1024)
                continue;
            sb_append(sb, "    HARNESS_CHECK(cudaFuncSetAttribute((const void *)");
            put_kernel(sb, ls[i].entry, r);
            sb_printf(sb, ",\n                                       cudaFuncAttributeMaxDynamicSharedMemorySize, %u));\n",
                      most);
        }
    }
    sb_append(sb, "}\n\n");
}

/* run_reference() or run_candidate(): the launches in order; *tmap_k
 * numbers the tensor maps as put_tmaps() does. */
static void put_plan(StrBuf *sb, const Plan *p, int reference, int *tmap_k)
{
    int n = reference ? p->nref_launches : p->nlaunches;
    const PlanLaunch *ls = reference ? p->ref_launches : p->launches;
    sb_printf(sb, "// The %s's launch plan, in order.\nstatic void run_%s(cudaStream_t s)\n{\n",
              reference ? "reference" : "candidate", reference ? "reference" : "candidate");
    for (int i = 0; i < n; i++) {
        const PlanLaunch *l = &ls[i];
        sb_printf(sb, "    // %d. %s<<<(%u, %u, %u), (%u, %u, %u), %u bytes>>>(", i + 1, l->entry, l->grid[0],
                  l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2], l->smem);
        for (int a = 0; a < l->nargs; a++) {
            const PlanArg *g = &l->args[a];
            sb_append(sb, a ? ", " : "");
            if (g->kind == ARG_BUFFER || g->kind == ARG_TMAP)
                sb_printf(sb, g->kind == ARG_TMAP ? "tensor_map(%s)" : "%s", p->buffers[g->buffer].name);
            else if (g->kind == ARG_F32 || g->kind == ARG_F64)
                sb_printf(sb, "%.9g", g->f);
            else
                sb_printf(sb, "%lld", (long long)g->i);
        }
        sb_append(sb, ")\n    {\n");
        StrBuf args = {0};
        for (int a = 0; a < l->nargs; a++) {
            const PlanArg *g = &l->args[a];
            sb_append(&args, !a ? "" : a % 4 ? ", " : ",\n                        ");
            switch (g->kind) {
            case ARG_BUFFER:
                sb_printf(&args, "&buf[BUF_%s].%s", p->buffers[g->buffer].name,
                          reference && p->buffers[g->buffer].role != ROLE_INPUT ? "ref" : "cand");
                continue;
            case ARG_TMAP:
                sb_printf(&args, "&tmap[%d]", (*tmap_k)++);
                continue;
            case ARG_I32: sb_printf(sb, "        int arg%d = %lld;\n", a + 1, (long long)g->i); break;
            case ARG_I64: sb_printf(sb, "        long long arg%d = %lldLL;\n", a + 1, (long long)g->i); break;
            case ARG_F32:
            case ARG_F64:
                sb_printf(sb, "        %s arg%d = ", g->kind == ARG_F32 ? "float" : "double", a + 1);
                put_real(sb, g->f, g->kind == ARG_F32);
                sb_append(sb, ";\n");
                break;
            }
            sb_printf(&args, "&arg%d", a + 1);
        }
        if (l->nargs)
            sb_printf(sb, "        void *args[] = {%s};\n", args.s);
        else
            sb_append(sb, "        void **args = nullptr;\n");
        sb_free(&args);
        sb_append(sb, "        HARNESS_CHECK(cudaLaunchKernel((const void *)");
        put_kernel(sb, l->entry, reference);
        sb_printf(sb, ",\n                                       dim3(%u, %u, %u), dim3(%u, %u, %u), args, %u, s));\n    }\n",
                  l->grid[0], l->grid[1],
                  l->grid[2], l->block[0], l->block[1], l->block[2], l->smem);
    }
    sb_append(sb, "}\n\n");
}

/* ---- the harness -------------------------------------------------------- */

static const char *file_name(const HarnessSpec *h)
{
    return h->file && *h->file ? h->file : "harness.cu";
}

/* The program's name: the file's name without ".cu". */
static int stem_len(const char *file)
{
    size_t n = strlen(file);
    return (int)(n > 3 && strcmp(file + n - 3, ".cu") == 0 ? n - 3 : n);
}

char *harness_build_line(const HarnessSpec *h)
{
    const char *file = file_name(h);
    return xasprintf("nvcc %s -O3 -o %.*s %s%s", h->nvcc_flags ? h->nvcc_flags : "-std=c++17", stem_len(file), file,
                     file, h->plan && has_tmaps(h->plan) ? " -lcuda" : "");
}

/* Check what harness_render needs; 0 or -1 with err. */
static int spec_check(const HarnessSpec *h, EvoErr *err)
{
    const Plan *p = h->plan;
    if (!h->source || !h->ref_source)
        return err_set(err, "harness: the %s source is missing", h->source ? "reference" : "candidate");
    if (!p)
        return err_set(err, "harness: the launch plan is not resolved");
    if (p->nlaunches < 1)
        return err_set(err, "harness: the plan has no candidate launch");
    if (strpbrk(file_name(h), "\"\\\n"))
        return err_set(err, "harness: file name '%s' holds a quote, a backslash or a newline", file_name(h));
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < (r ? p->nref_launches : p->nlaunches); i++) {
            const PlanLaunch *l = r ? &p->ref_launches[i] : &p->launches[i];
            for (int a = 0; a < l->nargs; a++) {
                const PlanArg *g = &l->args[a];
                if ((g->kind == ARG_BUFFER || g->kind == ARG_TMAP) && (g->buffer < 0 || g->buffer >= p->nbuffers))
                    return err_set(err, "harness: %s launch %d (%s) argument %d: buffer index %d out of range",
                                   r ? "reference" : "candidate", i + 1, l->entry, a + 1, g->buffer);
            }
            for (int j = 0; r && j < p->nlaunches; j++)
                if (strcmp(l->entry, p->launches[j].entry) == 0)
                    return err_set(err, "harness: the candidate and the reference both have an entry '%s'; two "
                                        "extern \"C\" kernels of one name cannot live in one program", l->entry);
        }
    return 0;
}

int harness_render(const HarnessSpec *h, char **out, EvoErr *err)
{
    *out = NULL;
    if (spec_check(h, err))
        return -1;
    const Plan *p = h->plan;
    const char *file = file_name(h);
    int ntmaps = 0, k = 0;
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < (r ? p->nref_launches : p->nlaunches); i++)
            for (int a = 0; a < (r ? p->ref_launches : p->launches)[i].nargs; a++)
                ntmaps += (r ? p->ref_launches : p->launches)[i].args[a].kind == ARG_TMAP;
    char *build = harness_build_line(h), *undef_cand = export_undef_lines(h->source),
         *undef_ref = export_undef_lines(h->ref_source);
    StrBuf sb = {0};
    sb_append(&sb, "// ----------------------------------------------------------------------------\n"
                   "// evoeng harness: a candidate, its task's reference and a main() that checks and\n"
                   "// times it, standalone.\n");
    if (h->header)
        put_text(&sb, h->header);
    sb_printf(&sb, "// shape:    %s\n", p->shape_label ? p->shape_label : "?");
    sb_printf(&sb, "// build:    %s\n", build);
    sb_printf(&sb, "// run:      ./%.*s [--seed N] [--warmup N] [--iters N] [--batch N]\n", stem_len(file), file);
    sb_append(&sb, "//   fills the inputs as evoeng's gate does (seed 1 unless --seed), runs the task's\n"
                   "//   reference and the candidate's launch plan, compares every output with the\n"
                   "//   task's atol/rtol (prints max abs/rel error) and checks that the inputs are\n"
                   "//   unchanged, then prints PASS, or FAIL and exits 1; then it times the plan\n"
                   "//   with CUDA events: the median of --iters samples (100), each --batch\n"
                   "//   back-to-back runs (10) after --warmup runs (20), per run.\n"
                   "//   Exit codes: 0 PASS, 1 FAIL, 2 usage, 3 a CUDA error.\n"
                   "// layout:   1. the candidate's kernel  2. the reference (namespace evo_ref)\n"
                   "//           3. the gate's input generator  4. host code (not seen by NVRTC)\n"
                   "// ----------------------------------------------------------------------------\n\n"
                   "// ==== 1. the candidate's kernel, the source evoeng compiled and measured =====\n");
    put_text(&sb, h->source);
    put_line_directive(&sb, file);
    sb_append(&sb, "// The candidate's macros end here: none of them reaches the code below.\n");
    sb_append(&sb, undef_cand);
    sb_append(&sb, "\n// ==== 2. the task's reference kernel ==========================================\n");
    put_reference(&sb, h->ref_source);
    put_line_directive(&sb, file);
    sb_append(&sb, undef_ref);
    sb_putc(&sb, '\n');
    sb_append(&sb, text_device);
    sb_append(&sb, "#ifndef __CUDACC_RTC__ // the host code: NVRTC compiles the kernels above alone\n"
                   "// ==== 4. host code ============================================================\n");
    if (ntmaps)
        sb_append(&sb, "#include <cuda.h> // cuTensorMapEncodeTiled (link with -lcuda)\n");
    sb_append(&sb, text_host_head);
    sb_append(&sb, "static const char *const SHAPE = \"");
    sb_append(&sb, p->shape_label ? p->shape_label : "?");
    sb_append(&sb, "\";\nstatic const double RECORDED_US = ");
    put_real(&sb, isnan(h->recorded_us) ? -1 : h->recorded_us, 0);
    sb_append(&sb, "; // the latency evoeng measured (-1: none)\n\n");
    put_buffers(&sb, p);
    put_tmaps(&sb, p, ntmaps);
    put_smem_limits(&sb, p);
    put_plan(&sb, p, 1, &k);
    put_plan(&sb, p, 0, &k);
    sb_append(&sb, text_host_main);
    free(build);
    free(undef_cand);
    free(undef_ref);
    *out = sb_take(&sb);
    return 0;
}
