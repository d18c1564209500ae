/*
 * confine: the paths a spec may name, the #include lines kernel code may
 * hold, the NVRTC options a spec may give, and the NVRTC log kept of a
 * compile. See confine.h.
 */
#include "task/confine.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

/* ---- allowed directories ---------------------------------------------- */

#define MAX_ALLOWED 16

static char *g_allowed[MAX_ALLOWED];   /* real paths, set before any thread loads a task */
static int   g_nallowed;

int confine_allow_dir(const char *dir, EvoErr *err)
{
    char *real = realpath(dir, NULL);
    if (!real)
        return err_set(err, "--allow-path %s: %s", dir, strerror(errno));
    if (g_nallowed == MAX_ALLOWED) {
        free(real);
        return err_set(err, "--allow-path: at most %d directories", MAX_ALLOWED);
    }
    g_allowed[g_nallowed++] = real;
    return 0;
}

void confine_reset(void)
{
    for (int i = 0; i < g_nallowed; i++)
        free(g_allowed[i]);
    g_nallowed = 0;
}

/* 1 when path equals dir or lies under it (both real paths). */
static int under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return path[0] == '/';
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static int system_tree(const char *real)
{
    return under(real, "/proc") || under(real, "/sys") || under(real, "/dev");
}

char *confine_resolve(const char *base, const char *root, const char *rel, EvoErr *err)
{
    if (!rel || !rel[0]) {
        err_set(err, "an empty file name");
        return NULL;
    }
    if (system_tree(rel)) {   /* by name, whatever it resolves to (or does not) */
        err_set(err, "'%s' is under /proc, /sys or /dev: evoeng never reads there", rel);
        return NULL;
    }
    char *joined = path_join(base, rel);
    char *real = realpath(joined, NULL);
    int e = errno;
    free(joined);
    if (!real) {
        err_set(err, "cannot read '%s': %s", rel, strerror(e));
        return NULL;
    }
    char *rroot = realpath(root ? root : base, NULL);
    int ok = rroot && under(real, rroot);
    for (int i = 0; !ok && i < g_nallowed; i++)
        ok = under(real, g_allowed[i]);
    if (system_tree(real)) {
        err_set(err, "'%s' is under %s: evoeng never reads there", rel, real);
        ok = -1;
    } else if (!ok) {
        err_set(err, "'%s' is outside the task's directory %s (it is %s): a task reads only its own files; "
                "give --allow-path DIR to allow another directory", rel, rroot ? rroot : (root ? root : base), real);
    }
    free(rroot);
    if (ok != 1) {
        free(real);
        return NULL;
    }
    char *r = xstrdup(real);
    free(real);
    return r;
}

/* ---- #include lines ---------------------------------------------------- */

/* One reading of the source: line splices removed, every character with
 * its line. The preprocessor's reading is one of four: a splice is a
 * backslash before a newline (strict) or before blanks and a newline
 * (lax), and a lone carriage return is a newline or a blank. The scan
 * checks all four, so that no choice of the compiler's hides a line. */
typedef struct View {
    char  *s;
    int   *line;
    size_t n;
} View;

static int nl_at(const char *p, int cr_newline)
{
    if (p[0] == '\n')
        return 1;
    if (p[0] == '\r' && p[1] == '\n')
        return 2;
    return p[0] == '\r' && cr_newline ? 1 : 0;
}

static void view_build(const char *src, int lax, int cr_newline, View *v)
{
    size_t len = strlen(src);
    v->s = xmalloc(len + 1);
    v->line = xmalloc((len + 1) * sizeof(int));
    v->n = 0;
    int line = 1;
    for (const char *p = src; *p;) {
        if (*p == '\\') {
            const char *q = p + 1;
            if (lax)
                while (*q == ' ' || *q == '\t' || *q == '\f' || *q == '\v')
                    q++;
            int k = nl_at(q, cr_newline);
            if (k) {
                line++;
                p = q + k;
                continue;
            }
        }
        int k = nl_at(p, cr_newline);
        v->line[v->n] = line;
        if (k) {
            v->s[v->n++] = '\n';
            line++;
            p += k;
            continue;
        }
        v->s[v->n++] = *p == '\r' ? ' ' : *p;
        p++;
    }
    v->s[v->n] = '\0';
    v->line[v->n] = line;
}

/* Skip blanks (bytes >= 0x80 count as blanks here: a scan that sees too
 * much is safe) and comments that close before the end of the line.
 * Returns the next position; *open is set when a comment runs past it. */
static size_t skip_space(const char *s, size_t i, size_t end, int *open)
{
    *open = 0;
    for (;;) {
        while (i < end && (s[i] == ' ' || s[i] == '\t' || s[i] == '\f' || s[i] == '\v' ||
                           (unsigned char)s[i] >= 0x80))
            i++;
        if (i + 1 < end && s[i] == '/' && s[i + 1] == '*') {
            const char *close = NULL;
            for (size_t k = i + 2; k + 1 < end; k++)
                if (s[k] == '*' && s[k + 1] == '/') {
                    close = s + k;
                    break;
                }
            if (!close) {
                *open = 1;
                return end;
            }
            i = (size_t)(close - s) + 2;
            continue;
        }
        return i;
    }
}

static const char *const forbidden_directives[] = {"include_next", "import", "embed", NULL};

/* What is wrong with the name of #include "name" / <name>, or NULL. */
static const char *bad_include_name(const char *name, size_t n)
{
    if (n == 0)
        return "an empty name";
    if (name[0] == '/')
        return "an absolute path (kernel code includes only NVRTC's CUDA headers and the task's own files)";
    for (size_t i = 0; i < n; i++) {
        if (name[i] == '\\')
            return "a backslash in the name";
        if (name[i] == '.' && i + 1 < n && name[i + 1] == '.')
            return "'..' in the name (kernel code includes only NVRTC's CUDA headers and the task's own files)";
        if ((unsigned char)name[i] < 0x20)
            return "a control character in the name";
    }
    return NULL;
}

/* The directive that may begin at s[i] (a line of the view ends at end):
 * 0 when it is harmless, -1 with err when it is refused. */
static int check_directive(const View *v, size_t i, size_t end, const char *file, EvoErr *err)
{
    const char *s = v->s;
    size_t start = i;
    int open;
    if (s[i] == '#')
        i++;
    else if (s[i] == '%' && i + 1 < end && s[i + 1] == ':')
        i += 2;
    else
        return 0;
    i = skip_space(s, i, end, &open);
    size_t n0 = i;
    int escaped = 0;
    while (i < end && (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '\\' || (unsigned char)s[i] >= 0x80)) {
        escaped |= s[i] == '\\' || (unsigned char)s[i] >= 0x80;
        i++;
    }
    size_t nlen = i - n0;
    int shown = (int)(end - start > 100 ? 100 : end - start);
    if (escaped && nlen > 0)
        return err_set(err, "%s line %d: '%.*s': an escaped or non-ASCII directive name is refused", file,
                       v->line[start], shown, s + start);
    for (int k = 0; forbidden_directives[k]; k++)
        if (nlen == strlen(forbidden_directives[k]) && strncmp(s + n0, forbidden_directives[k], nlen) == 0)
            return err_set(err, "%s line %d: '%.*s': #%s is not allowed in kernel code", file, v->line[start],
                           shown, s + start, forbidden_directives[k]);
    if (nlen != 7 || strncmp(s + n0, "include", 7) != 0)
        return 0;
    i = skip_space(s, i, end, &open);
    char close = i < end && s[i] == '"' ? '"' : i < end && s[i] == '<' ? '>' : 0;
    if (!close)
        return err_set(err, "%s line %d: '%.*s': a computed #include (the name comes from a macro) is refused", file,
                       v->line[start], shown, s + start);
    const char *name = s + i + 1;
    const char *q = memchr(name, close, end - (i + 1));
    if (!q)
        return err_set(err, "%s line %d: '%.*s': an #include without its closing %c is refused", file,
                       v->line[start], shown, s + start, close);
    const char *why = bad_include_name(name, (size_t)(q - name));
    if (why)
        return err_set(err, "%s line %d: '%.*s': refused: %s", file, v->line[start], shown, s + start, why);
    return 0;
}

/* Every place on the line [b, end) where a directive could begin: after
 * blanks and comments at its start, and after every comment close on it
 * (the end of a comment that began on an earlier line). */
static int scan_line(const View *v, size_t b, size_t end, const char *file, EvoErr *err)
{
    const char *s = v->s;
    int open;
    if (b == 0 && end - b >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)
        b += 3;
    size_t i = skip_space(s, b, end, &open);
    if (i < end && check_directive(v, i, end, file, err) < 0)
        return -1;
    for (size_t k = b; k + 1 < end; k++) {
        if (s[k] != '*' || s[k + 1] != '/')
            continue;
        i = skip_space(s, k + 2, end, &open);
        if (i < end && check_directive(v, i, end, file, err) < 0)
            return -1;
    }
    return 0;
}

int confine_scan_includes(const char *src, const char *file, EvoErr *err)
{
    if (!src)
        return 0;
    file = file ? file : "kernel";
    if (strstr(src, "include_alias"))
        return err_set(err, "%s: 'include_alias' (a pragma that renames includes) is refused in kernel code", file);
    for (int mode = 0; mode < 4; mode++) {
        View v;
        view_build(src, mode & 1, mode >> 1, &v);
        int rc = 0;
        for (size_t b = 0; b <= v.n && rc == 0;) {
            const char *nl = memchr(v.s + b, '\n', v.n - b);
            size_t end = nl ? (size_t)(nl - v.s) : v.n;
            rc = scan_line(&v, b, end, file, err);
            b = end + 1;
        }
        free(v.s);
        free(v.line);
        if (rc)
            return -1;
    }
    return 0;
}

/* ---- compile options ---------------------------------------------------- */

static const char *const opt_exact[] = {
    "--use_fast_math", "-use_fast_math", "--extra-device-vectorization", "-extra-device-vectorization",
    "-lineinfo", "--generate-line-info", "--restrict", "-restrict", "-default-device",
    "--device-as-default-execution-space", "-w", "--disable-warnings", "--dopt=on", "--dopt=off",
    "-std=c++17", "-std=c++20", "--std=c++17", "--std=c++20", "--minimal", "-minimal", NULL,
};
static const char *const opt_bool[] = {"--fmad=", "-fmad=", "--ftz=", "-ftz=", "--prec-div=", "-prec-div=",
                                       "--prec-sqrt=", "-prec-sqrt=", NULL};
static const char *const opt_ptxas[] = {"-O0", "-O1", "-O2", "-O3", "-v", "--verbose", "-dlcm=ca", "-dlcm=cg",
                                        "--warn-on-spills", "--warn-on-local-memory-usage", NULL};

const char *confine_allowed_options(void)
{
    return "-DNAME[=VALUE], -UNAME, -std=c++17|c++20, --minimal, --use_fast_math, -maxrregcount=N, "
           "--extra-device-vectorization, --fmad/--ftz/--prec-div/--prec-sqrt=true|false, -lineinfo, --restrict, "
           "-default-device, -w, --diag-suppress/--diag-error/--diag-warn=N[,N], --dopt=on|off, "
           "--ptxas-options=-O0..-O3|-v|-dlcm=ca|-dlcm=cg|--warn-on-spills|--warn-on-local-memory-usage";
}

static const char *after(const char *opt, const char *const *prefixes)
{
    for (int i = 0; prefixes[i]; i++) {
        size_t n = strlen(prefixes[i]);
        if (strncmp(opt, prefixes[i], n) == 0)
            return opt + n;
    }
    return NULL;
}

static int in_set(const char *s, const char *const *set)
{
    for (int i = 0; set[i]; i++)
        if (strcmp(s, set[i]) == 0)
            return 1;
    return 0;
}

/* NAME[=VALUE] of -D (want_value) or NAME of -U. */
static int macro_ok(const char *s, int want_value)
{
    if (!(isalpha((unsigned char)*s) || *s == '_'))
        return 0;
    while (isalnum((unsigned char)*s) || *s == '_')
        s++;
    if (*s == '\0')
        return 1;
    if (*s != '=' || !want_value)
        return 0;
    for (s++; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '.' || *s == '+' || *s == '-'))
            return 0;
    return 1;
}

static int number_list_ok(const char *s)
{
    if (!isdigit((unsigned char)*s))
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s) && !(*s == ',' && isdigit((unsigned char)s[1])))
            return 0;
    return 1;
}

int confine_check_option(const char *opt, EvoErr *err)
{
    static const char *const d_pre[] = {"--define-macro=", "-D", NULL};
    static const char *const u_pre[] = {"--undefine-macro=", "-U", NULL};
    static const char *const r_pre[] = {"--maxrregcount=", "-maxrregcount=", NULL};
    static const char *const diag_pre[] = {"--diag-suppress=", "-diag-suppress=", "--diag-error=", "-diag-error=",
                                           "--diag-warn=", "-diag-warn=", NULL};
    static const char *const x_pre[] = {"--ptxas-options=", "-Xptxas=", NULL};
    const char *v;
    long n;
    if (!opt || !*opt)
        return err_set(err, "an empty option");
    if (in_set(opt, opt_exact))
        return 0;
    if ((v = after(opt, d_pre)))
        return macro_ok(v, 1) ? 0 : err_set(err, "\"%s\": expected -DNAME or -DNAME=VALUE (VALUE of letters, digits "
                                                 "and _ . + -) in one word", opt);
    if ((v = after(opt, u_pre)))
        return macro_ok(v, 0) ? 0 : err_set(err, "\"%s\": expected -UNAME in one word", opt);
    if ((v = after(opt, r_pre)))
        return parse_long(v, 1, 255, &n) == 0 ? 0 : err_set(err, "\"%s\": expected a register count from 1 to 255", opt);
    if ((v = after(opt, opt_bool)))
        return strcmp(v, "true") == 0 || strcmp(v, "false") == 0 ? 0 : err_set(err, "\"%s\": expected true or false", opt);
    if ((v = after(opt, diag_pre)))
        return number_list_ok(v) ? 0 : err_set(err, "\"%s\": expected diagnostic numbers such as 177,550", opt);
    if ((v = after(opt, x_pre)))
        return in_set(v, opt_ptxas) ? 0 : err_set(err, "\"%s\": this ptxas option is not allowed", opt);
    if (strncmp(opt, "-std", 4) == 0 || strncmp(opt, "--std", 5) == 0)
        return err_set(err, "\"%s\": only -std=c++17 and -std=c++20 are allowed (the include check reads C++17 "
                       "and later: no trigraphs)", opt);
    if (strncmp(opt, "-arch", 5) == 0 || strncmp(opt, "--gpu-architecture", 18) == 0)
        return err_set(err, "\"%s\": evoeng sets the target itself (check --arch, or the GPU's own)", opt);
    return err_set(err, "\"%s\": not an allowed NVRTC option (allowed: %s)", opt, confine_allowed_options());
}

/* ---- the NVRTC log ------------------------------------------------------ */

#define NOWHERE_DIR "/proc/evoeng-nvrtc-nowhere/"

char *confine_program_name(const char *name)
{
    return xasprintf("%s%s", NOWHERE_DIR, name);
}

/* The file of an EDG diagnostic line "FILE(LINE): error: ...", copied
 * into name[cap]; 0 when line is not one. */
static int diag_file(const char *line, size_t len, char *name, size_t cap)
{
    for (size_t i = 1; i + 3 < len; i++) {
        if (line[i] != '(' || !isdigit((unsigned char)line[i + 1]))
            continue;
        size_t k = i + 1;
        while (k < len && isdigit((unsigned char)line[k]))
            k++;
        if (k + 2 < len && line[k] == ')' && line[k + 1] == ':' && line[k + 2] == ' ') {
            size_t n = i < cap ? i : cap - 1;
            memcpy(name, line, n);
            name[n] = '\0';
            return 1;
        }
    }
    return 0;
}

/* A file whose text may show in a kept log: the program itself, a name
 * without a directory (evoeng's headers, NVRTC's own, a #line name: the
 * program's directory cannot exist, so no such name is a file read from
 * disk) or a header of the CUDA toolkit. */
static int file_allowed(const char *file, const char *prog)
{
    if ((prog && strcmp(file, prog) == 0) || !strchr(file, '/'))
        return 1;
    return under(file, EVO_CUDA_INCLUDE) && !strstr(file, "..");
}

char *confine_filter_log(const char *raw, const char *prog)
{
    StrBuf sb = {0};
    int hide = 0;
    char *log = str_replace_all(raw ? raw : "", NOWHERE_DIR, "");
    for (const char *p = log; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char file[512];
        if (diag_file(p, len, file, sizeof(file))) {
            hide = !file_allowed(file, prog);
            if (hide)
                sb_printf(&sb, "%s: a diagnostic about a file outside the task (withheld by evoeng)\n", file);
            else
                sb_appendn(&sb, p, nl ? len + 1 : len);
        } else if (hide && len > 0 && p[0] == ' ') {
            /* a quoted line of the withheld file, or its caret */
        } else {
            hide = 0;
            sb_appendn(&sb, p, nl ? len + 1 : len);
        }
        p += nl ? len + 1 : len;
    }
    free(log);
    return sb_take(&sb);
}
