/*
 * kscan: launchers, shared arrays, static asserts and macros of a kernel
 * file, and C expressions in the spec's language. See kscan.h.
 *
 * Layout: helpers, statements and locals, launches, kernels (bounds,
 * shared arrays, asserts), macros and switches, the walk, the expression
 * translator.
 */
#include "compile/kscan.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/cexpr.h"
#include "compile/clex.h"
#include "util.h"

#define PUSH(arr, n, item)                                                   \
    do {                                                                     \
        (arr) = xrealloc((arr), (size_t)((n) + 1) * sizeof(*(arr)));         \
        (arr)[(n)++] = (item);                                               \
    } while (0)

/* ---- helpers ------------------------------------------------------------ */

typedef struct StrList {
    char **v;
    int    n;
} StrList;

static void add_part(void *ctx, const char *a, const char *b)
{
    StrList *l = ctx;
    PUSH(l->v, l->n, clex_trim(a, b));
}

/* The first n comma-separated parts of s[a..b) into slots[0..n) (the
 * rest dropped; slots past the parts left as they are). */
static void split_into(const char *a, const char *b, char **slots, int n)
{
    StrList parts = {0};
    clex_split_commas(a, b, add_part, &parts);
    for (int i = 0; i < parts.n; i++) {
        if (i < n)
            slots[i] = parts.v[i];
        else
            free(parts.v[i]);
    }
    free(parts.v);
}

static void free_strs(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* ---- statements and locals ---------------------------------------------- */

typedef void (*StmtVisit)(void *ctx, const char *a, const char *b);

/* Call visit for each statement of code-only text: the pieces between ';',
 * '{' and '}' outside parentheses. */
static void statements(const char *code, StmtVisit visit, void *ctx)
{
    int depth = 0;
    const char *start = code;
    for (const char *p = code; *p; p++) {
        if (*p == '(')
            depth++;
        else if (*p == ')' && depth > 0)
            depth--;
        else if (depth == 0 && (*p == ';' || *p == '{' || *p == '}')) {
            if (p > start)
                visit(ctx, start, p);
            start = p + 1;
        }
    }
}

static int is_qualifier(const char *w, size_t n)
{
    static const char *const words[] = {"const", "constexpr", "static", "volatile", "register", NULL};
    for (const char *const *k = words; *k; k++)
        if (strlen(*k) == n && strncmp(*k, w, n) == 0)
            return 1;
    return 0;
}

typedef struct LocalCtx {
    KscanLocal *v;
    int         n;
    int         scalars_only;   /* kernels: constexpr/const scalars, no dim3 */
} LocalCtx;

static void add_local(LocalCtx *c, const char *type, const char *a, const char *b, const char *init_a,
                      const char *init_b)
{
    KscanLocal l = {xstrdup(type), clex_trim(a, b), clex_trim(init_a, init_b)};
    PUSH(c->v, c->n, l);
}

/* dim3 NAME(...), dim3 NAME{...}, dim3 NAME = dim3(...), dim3 NAME = {...}, dim3 NAME = e */
static void dim3_local(LocalCtx *c, const char *p, const char *b)
{
    p = clex_skip_blanks(p);
    const char *n0 = p;
    while (p < b && clex_is_ident((unsigned char)*p))
        p++;
    if (p == n0)
        return;
    const char *n1 = p;
    p = clex_skip_blanks(p);
    if (p < b && *p == '=') {
        p = clex_skip_blanks(p + 1);
        if (strncmp(p, "dim3", 4) == 0 && !clex_is_ident((unsigned char)p[4]))
            p = clex_skip_blanks(p + 4);
        if (p >= b || (*p != '(' && *p != '{')) {
            add_local(c, "dim3", n0, n1, p, b);
            return;
        }
    }
    if (p >= b || (*p != '(' && *p != '{'))
        return;
    const char *e = b;
    while (e > p && isspace((unsigned char)e[-1]))
        e--;
    if (e > p + 1 && (e[-1] == ')' || e[-1] == '}'))
        add_local(c, "dim3", n0, n1, p + 1, e - 1);
}

typedef struct DeclCtx {
    LocalCtx   *c;
    const char *type;
} DeclCtx;

static void scalar_declarator(void *ctx, const char *a, const char *b)
{
    DeclCtx *d = ctx;
    const char *eq = a;
    while (eq < b && *eq != '=')
        eq++;
    if (eq >= b || eq[1] == '=')
        return;
    const char *n0 = clex_skip_blanks(a), *n1 = n0;
    while (n1 < eq && clex_is_ident((unsigned char)*n1))
        n1++;
    if (n1 == n0 || isdigit((unsigned char)*n0) || clex_skip_blanks(n1) != eq)
        return;
    add_local(d->c, d->type, n0, n1, eq + 1, b);
}

/* [qualifiers] type-words NAME = e [, NAME = e ...] */
static void scalar_local(LocalCtx *c, const char *a, const char *b)
{
    const char *p = a;
    int ntype = 0, constant = 0;
    StrBuf type = {0};
    for (;;) {
        p = clex_skip_blanks(p);
        const char *w = p;
        while (p < b && clex_is_ident((unsigned char)*p))
            p++;
        size_t n = (size_t)(p - w);
        if (n == 0)
            break;
        int q = is_qualifier(w, n), t = !q && cexpr_type_word(w, n);
        if (!q && !t) {
            p = w;
            break;
        }
        constant |= q && (n == 5 || n == 9);   /* const, constexpr */
        ntype += t;
        sb_printf(&type, "%s%.*s", type.len ? " " : "", (int)n, w);
    }
    if (ntype > 0 && (!c->scalars_only || constant)) {
        DeclCtx d = {c, type.s};
        clex_split_commas(p, b, scalar_declarator, &d);
    }
    sb_free(&type);
}

static void local_visit(void *ctx, const char *a, const char *b)
{
    LocalCtx *c = ctx;
    const char *p = clex_skip_blanks(a);
    if (strncmp(p, "const ", 6) == 0 && strncmp(clex_skip_blanks(p + 6), "dim3", 4) == 0)
        p = clex_skip_blanks(p + 6);
    if (!c->scalars_only && strncmp(p, "dim3", 4) == 0 && isspace((unsigned char)p[4]))
        dim3_local(c, p + 4, b);
    else
        scalar_local(c, p, b);
}

static void locals_of(const char *code, int scalars_only, KscanLocal **out, int *n)
{
    LocalCtx c = {NULL, 0, scalars_only};
    statements(code, local_visit, &c);
    *out = c.v;
    *n = c.n;
}

static void locals_free(KscanLocal *l, int n)
{
    for (int i = 0; i < n; i++) {
        free(l[i].type);
        free(l[i].name);
        free(l[i].init);
    }
    free(l);
}

const KscanLocal *kscan_local(const KscanLocal *l, int n, const char *name)
{
    for (int i = n - 1; i >= 0; i--)
        if (strcmp(l[i].name, name) == 0)
            return &l[i];
    return NULL;
}

/* ---- launches ------------------------------------------------------------ */

/* The launch whose "<<<" is at code[at]; 0, or -1 when it cannot be read. */
static int launch_at(const char *code, size_t at, KscanLaunch *l)
{
    memset(l, 0, sizeof(*l));
    const char *cfg = code + at + 3, *cfg_end = strstr(cfg, ">>>");
    if (!cfg_end)
        return -1;
    split_into(cfg, cfg_end, l->config, 4);
    /* the arguments */
    const char *p = clex_skip_blanks(cfg_end + 3);
    long close = *p == '(' ? clex_match_paren(code, (size_t)(p - code)) : -1;
    if (close < 0)
        return -1;
    StrList args = {0};
    clex_split_commas(p + 1, code + close, add_part, &args);
    l->args = args.v;
    l->nargs = args.n;
    /* the callee and its template arguments */
    size_t e = at;
    while (e > 0 && isspace((unsigned char)code[e - 1]))
        e--;
    if (e > 0 && code[e - 1] == '>') {
        int depth = 0;
        size_t k = e;
        while (k > 0) {
            k--;
            if (code[k] == '>')
                depth++;
            else if (code[k] == '<' && --depth == 0)
                break;
        }
        StrList ta = {0};
        clex_split_commas(code + k + 1, code + e - 1, add_part, &ta);
        l->targs = ta.v;
        l->ntargs = ta.n;
        e = k;
        while (e > 0 && isspace((unsigned char)code[e - 1]))
            e--;
    }
    size_t b = e;
    while (b > 0 && (clex_is_ident((unsigned char)code[b - 1]) || code[b - 1] == ':'))
        b--;
    if (b == e)
        return -1;
    l->kernel = xstrndup(code + b, e - b);
    /* the guard: if (cond) k<<<...>>>(...); or if (cond) { k<<<...>>>(...); */
    size_t g = b;
    while (g > 0 && isspace((unsigned char)code[g - 1]))
        g--;
    if (g > 0 && code[g - 1] == '{') {
        g--;
        while (g > 0 && isspace((unsigned char)code[g - 1]))
            g--;
    }
    if (g > 0 && code[g - 1] == ')') {
        long open = clex_match_paren_back(code, g - 1);
        char w[8];
        if (open >= 0) {
            clex_word_before(code, (size_t)open, w, sizeof(w));
            if (strcmp(w, "if") == 0)
                l->guard = clex_trim(code + open + 1, code + g - 1);
        }
    }
    return 0;
}

static void launch_free(KscanLaunch *l)
{
    free(l->kernel);
    free_strs(l->targs, l->ntargs);
    for (int i = 0; i < 4; i++)
        free(l->config[i]);
    free_strs(l->args, l->nargs);
    free(l->guard);
}

/* ---- kernels: bounds, shared arrays, asserts ----------------------------- */

/* __align__(N) or alignas(N) at p: N, with *end after it; else 0. */
static int align_at(const char *p, const char **end)
{
    static const char *const words[] = {"__align__", "alignas", NULL};
    for (const char *const *w = words; *w; w++) {
        size_t n = strlen(*w);
        if (strncmp(p, *w, n) != 0 || clex_is_ident((unsigned char)p[n]))
            continue;
        const char *q = clex_skip_blanks(p + n);
        if (*q != '(')
            return 0;
        long c = clex_match_paren(q, 0);
        if (c < 0)
            return 0;
        *end = q + c + 1;
        return atoi(q + 1);
    }
    return 0;
}

typedef struct SharedCtx {
    KscanKernel *k;
    char        *type;
    int          align;
} SharedCtx;

/* One declarator: name[d1][d2]... */
static void shared_declarator(void *ctx, const char *a, const char *b)
{
    SharedCtx *c = ctx;
    const char *p = clex_skip_blanks(a);
    const char *n0 = p;
    while (p < b && clex_is_ident((unsigned char)*p))
        p++;
    if (p == n0)
        return;
    KscanShared sh = {xstrdup(c->type), xstrndup(n0, (size_t)(p - n0)), NULL, 0, c->align};
    for (p = clex_skip_blanks(p); p < b && *p == '['; p = clex_skip_blanks(p)) {
        const char *q = p + 1;
        int depth = 1;
        while (q < b && depth > 0) {
            depth += *q == '[';
            depth -= *q == ']';
            q++;
        }
        PUSH(sh.dims, sh.ndims, clex_trim(p + 1, q - 1));
        p = q;
    }
    PUSH(c->k->shared, c->k->nshared, sh);
}

static void shared_visit(void *ctx, const char *a, const char *b)
{
    KscanKernel *k = ctx;
    char *st = clex_trim(a, b);
    if (!clex_has_word(st, "__shared__")) {
        free(st);
        return;
    }
    if (clex_has_word(st, "extern")) {
        k->dyn_shared = 1;
        free(st);
        return;
    }
    /* drop the storage words and the alignment; what is left is
     * "TYPE decl, decl..." */
    StrBuf rest = {0};
    int align = 0;
    for (const char *p = st; *p;) {
        const char *end = NULL;
        int al = align_at(p, &end);
        if (end) {
            align = al;
            p = end;
            continue;
        }
        const char *w = p;
        while (clex_is_ident((unsigned char)*p))
            p++;
        size_t n = (size_t)(p - w);
        if (n > 0) {
            if (!((n == 10 && strncmp(w, "__shared__", 10) == 0) || (n == 6 && strncmp(w, "static", 6) == 0) ||
                  (n == 8 && strncmp(w, "volatile", 8) == 0)))
                sb_appendn(&rest, w, n);
            continue;
        }
        sb_putc(&rest, *p++);
    }
    free(st);
    /* the type is everything before the first declarator's name */
    const char *s = rest.s ? rest.s : "";
    const char *cut = s + strcspn(s, "[,=");
    const char *name_at = NULL;
    char *name = clex_last_ident(s, cut, &name_at);
    if (name) {
        SharedCtx c = {k, clex_trim(s, name_at), align};
        clex_split_commas(name_at, s + strlen(s), shared_declarator, &c);
        free(c.type);
        free(name);
    }
    sb_free(&rest);
}

/* The static_asserts of src[a..b) (original text: their messages are strings). */
static void asserts_of(const char *src, size_t a, size_t b, KscanAssert **out, int *n)
{
    static const char kw[] = "static_assert";
    size_t kl = sizeof(kw) - 1;
    for (size_t i = a; i < b;) {
        size_t j = clex_skip(src, b, i);
        if (j != i) {
            i = j;
            continue;
        }
        if (strncmp(src + i, kw, kl) != 0 || (i > 0 && clex_is_ident((unsigned char)src[i - 1])) ||
            clex_is_ident((unsigned char)src[i + kl])) {
            i++;
            continue;
        }
        size_t p = (size_t)(clex_skip_blanks(src + i + kl) - src);
        if (src[p] != '(') {
            i += kl;
            continue;
        }
        /* to the matching ')', noting the last top-level comma and string */
        int depth = 0;
        size_t q = p, comma = 0, str = 0;
        while (q < b) {
            size_t k = clex_skip(src, b, q);
            if (k != q) {
                if (src[q] == '"' && depth == 1 && !str)
                    str = q;
                q = k;
                continue;
            }
            if (src[q] == '(')
                depth++;
            else if (src[q] == ')' && --depth == 0)
                break;
            else if (src[q] == ',' && depth == 1) {
                comma = q;
                str = 0;
            }
            q++;
        }
        if (q >= b)
            break;
        KscanAssert as;
        size_t cend = comma && str ? comma : q;
        as.cond = clex_code_only(src, p + 1, cend);
        char *t = clex_trim(as.cond, as.cond + strlen(as.cond));
        free(as.cond);
        as.cond = t;
        StrBuf msg = {0};
        for (size_t s = str; comma && str && s < q; s++) {
            if (src[s] != '"')
                continue;
            size_t e = clex_skip(src, q, s);
            if (e > s + 1)
                sb_appendn(&msg, src + s + 1, e - s - 2);
            s = e - 1;
        }
        as.msg = msg.s ? sb_take(&msg) : xstrdup("");
        PUSH(*out, *n, as);
        i = q + 1;
    }
}

static void bounds_of(const char *head, KscanKernel *k)
{
    const char *p = strstr(head, "__launch_bounds__");
    if (!p)
        return;
    p = clex_skip_blanks(p + 17);
    long c = *p == '(' ? clex_match_paren(p, 0) : -1;
    if (c < 0)
        return;
    split_into(p + 1, p + c, k->bounds, 2);
}

/* ---- macros and switches ------------------------------------------------- */

/* The object-like #defines of src, first definition of each name. */
static void macros_of(const char *src, Kscan *out)
{
    for (const char *line = src; *line;) {
        const char *eol = line;
        while (*eol && !(*eol == '\n' && (eol == line || eol[-1] != '\\')))
            eol++;
        const char *n0, *p;
        size_t nlen = clex_define_name(line, &n0, &p);
        if (nlen > 0 && *p != '(') {
            char *name = xstrndup(n0, nlen);
            char *code = clex_code_only(p, 0, (size_t)(eol - p));
            for (char *c = code; *c; c++)
                if (*c == '\\' || *c == '\n')
                    *c = ' ';
            KscanMacro m = {name, clex_trim(code, code + strlen(code))};
            free(code);
            if (kscan_macro(out, name)) {
                free(m.name);
                free(m.value);
            } else {
                PUSH(out->macros, out->nmacros, m);
            }
        }
        line = *eol ? eol + 1 : eol;
    }
}

/* 1 when the word at s[a..b) stands as a condition: after (blanks and)
 * the start of an #if, "!", "&&", "||", "if (" or "while (", and before
 * the end, ")", "&&", "||" or "?" -- or before "?" whatever precedes. */
static int stands_as_condition(const char *s, size_t a, size_t b, size_t start, int start_ok)
{
    const char *n = s + b;
    while (*n == ' ' || *n == '\t')
        n++;
    if (*n == '?')
        return 1;
    int next_ok = *n == '\0' || *n == '\n' || *n == ')' || strncmp(n, "&&", 2) == 0 || strncmp(n, "||", 2) == 0 ||
                  strncmp(n, "//", 2) == 0 || strncmp(n, "/*", 2) == 0;
    size_t p = a;
    while (p > start && (s[p - 1] == ' ' || s[p - 1] == '\t'))
        p--;
    if (p == start)
        return start_ok && next_ok;
    char c = s[p - 1];
    if (c == '!' || (p >= start + 2 && (strncmp(s + p - 2, "&&", 2) == 0 || strncmp(s + p - 2, "||", 2) == 0)))
        return next_ok;
    if (c == '(') {
        char w[8];
        clex_word_before(s, p - 1, w, sizeof(w));
        return next_ok && (strcmp(w, "if") == 0 || strcmp(w, "while") == 0);
    }
    return 0;
}

int kscan_is_switch(const char *src, const char *knob)
{
    size_t kl = strlen(knob);
    /* #if / #elif lines */
    for (const char *line = src; *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        char *l = xstrndup(line, len);
        const char *p = clex_skip_blanks(l);
        if (*p == '#') {
            p = clex_skip_blanks(p + 1);
            size_t skip = strncmp(p, "if", 2) == 0 && isspace((unsigned char)p[2]) ? 2
                        : strncmp(p, "elif", 4) == 0 && isspace((unsigned char)p[4]) ? 4 : 0;
            if (skip) {
                size_t start = (size_t)(p - l) + skip;
                for (const char *w = strstr(l + start, knob); w; w = strstr(w + 1, knob)) {
                    size_t a = (size_t)(w - l);
                    if ((a > 0 && clex_is_ident((unsigned char)l[a - 1])) || clex_is_ident((unsigned char)w[kl]))
                        continue;
                    if (stands_as_condition(l, a, a + kl, start, 1)) {
                        free(l);
                        return 1;
                    }
                }
            }
        }
        free(l);
        line = eol ? eol + 1 : line + len;
    }
    /* C code */
    char *code = clex_code_only(src, 0, strlen(src));
    int yes = 0;
    for (const char *w = strstr(code, knob); w && !yes; w = strstr(w + 1, knob)) {
        size_t a = (size_t)(w - code);
        if ((a > 0 && clex_is_ident((unsigned char)code[a - 1])) || clex_is_ident((unsigned char)w[kl]))
            continue;
        size_t start = a;
        while (start > 0 && code[start - 1] != ';' && code[start - 1] != '{' && code[start - 1] != '}')
            start--;
        yes = stands_as_condition(code, a, a + kl, start, 0);
    }
    free(code);
    return yes;
}

/* ---- the walk ------------------------------------------------------------ */

typedef struct WalkCtx {
    const char *src;
    Kscan      *out;
    size_t     *spans;    /* kernel bodies [brace, end] pairs, for the file-scope asserts */
    int         nspans;
} WalkCtx;

static void kernel_visit(WalkCtx *w, const char *head, size_t brace, size_t end, const char *ns)
{
    KfileKernel sig;
    if (kfile_signature(head, &sig))
        return;
    KscanKernel k;
    memset(&k, 0, sizeof(k));
    k.name = ns[0] ? xasprintf("%s::%s", ns, sig.name) : xstrdup(sig.name);
    kfile_signature_clear(&sig);
    bounds_of(head, &k);
    char *code = clex_code_only(w->src, brace + 1, end);
    statements(code, shared_visit, &k);
    locals_of(code, 1, &k.locals, &k.nlocals);
    free(code);
    asserts_of(w->src, brace + 1, end, &k.asserts, &k.nasserts);
    PUSH(w->out->kernels, w->out->nkernels, k);
    w->spans = xrealloc(w->spans, (size_t)(w->nspans + 1) * 2 * sizeof(size_t));
    w->spans[2 * w->nspans] = brace;
    w->spans[2 * w->nspans + 1] = end;
    w->nspans++;
}

static void launcher_visit(WalkCtx *w, const char *head, size_t brace, size_t end)
{
    char *code = clex_code_only(w->src, brace + 1, end);
    if (!strstr(code, "<<<")) {
        free(code);
        return;
    }
    KscanLauncher l;
    memset(&l, 0, sizeof(l));
    if (kfile_signature(head, &l.sig)) {
        free(code);
        return;
    }
    locals_of(code, 0, &l.locals, &l.nlocals);
    for (const char *p = strstr(code, "<<<"); p; p = strstr(p + 3, "<<<")) {
        KscanLaunch la;
        if (launch_at(code, (size_t)(p - code), &la) == 0)
            PUSH(l.launches, l.nlaunches, la);
        else
            launch_free(&la);
    }
    free(code);
    PUSH(w->out->launchers, w->out->nlaunchers, l);
}

static void walk_visit(void *ctx, const char *head, size_t decl, size_t brace, size_t end, const char *ns,
                       int extern_c)
{
    (void)decl;
    (void)extern_c;
    WalkCtx *w = ctx;
    if (clex_has_word(head, "__global__"))
        kernel_visit(w, head, brace, end, ns);
    else if (!clex_has_word(head, "__device__"))
        launcher_visit(w, head, brace, end);
}

void kscan_file(const char *src, Kscan *out)
{
    memset(out, 0, sizeof(*out));
    WalkCtx w = {src, out, NULL, 0};
    clex_walk_functions(src, walk_visit, &w);
    macros_of(src, out);
    /* static_asserts outside the kernels (file scope, device helpers)
     * hold for every kernel */
    KscanAssert *fa = NULL;
    int nfa = 0;
    size_t n = strlen(src), from = 0;
    for (int s = 0; s <= w.nspans; s++) {
        size_t to = s < w.nspans ? w.spans[2 * s] : n;
        asserts_of(src, from, to, &fa, &nfa);
        if (s < w.nspans)
            from = w.spans[2 * s + 1] + 1;
    }
    for (int k = 0; k < out->nkernels; k++) {
        KscanKernel *kk = &out->kernels[k];
        for (int i = 0; i < nfa; i++) {
            KscanAssert a = {xstrdup(fa[i].cond), xstrdup(fa[i].msg)};
            PUSH(kk->asserts, kk->nasserts, a);
        }
    }
    for (int i = 0; i < nfa; i++) {
        free(fa[i].cond);
        free(fa[i].msg);
    }
    free(fa);
    free(w.spans);
}

void kscan_free(Kscan *k)
{
    for (int i = 0; i < k->nlaunchers; i++) {
        KscanLauncher *l = &k->launchers[i];
        kfile_signature_clear(&l->sig);
        locals_free(l->locals, l->nlocals);
        for (int j = 0; j < l->nlaunches; j++)
            launch_free(&l->launches[j]);
        free(l->launches);
    }
    free(k->launchers);
    for (int i = 0; i < k->nkernels; i++) {
        KscanKernel *kk = &k->kernels[i];
        free(kk->name);
        free(kk->bounds[0]);
        free(kk->bounds[1]);
        for (int j = 0; j < kk->nshared; j++) {
            free(kk->shared[j].type);
            free(kk->shared[j].name);
            free_strs(kk->shared[j].dims, kk->shared[j].ndims);
        }
        free(kk->shared);
        for (int j = 0; j < kk->nasserts; j++) {
            free(kk->asserts[j].cond);
            free(kk->asserts[j].msg);
        }
        free(kk->asserts);
        locals_free(kk->locals, kk->nlocals);
    }
    free(k->kernels);
    for (int i = 0; i < k->nmacros; i++) {
        free(k->macros[i].name);
        free(k->macros[i].value);
    }
    free(k->macros);
    memset(k, 0, sizeof(*k));
}

const KscanKernel *kscan_kernel(const Kscan *k, const char *name)
{
    for (int i = 0; i < k->nkernels; i++)
        if (strcmp(k->kernels[i].name, name) == 0)
            return &k->kernels[i];
    return NULL;
}

const KscanMacro *kscan_macro(const Kscan *k, const char *name)
{
    for (int i = 0; i < k->nmacros; i++)
        if (strcmp(k->macros[i].name, name) == 0)
            return &k->macros[i];
    return NULL;
}
