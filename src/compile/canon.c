/*
 * canon: a source's text as its preprocessor will leave it (canon.h).
 *
 * Three passes. The first cuts the source into logical lines (line
 * splices joined, comments replaced by a space, a block comment that
 * spans lines joining them), counting the physical lines of each. The
 * second walks the directives, keeping the conditional state and the
 * #define table, and evaluates #if and #elif: `defined` first, then macro
 * expansion (object-like and function-like, with the names being expanded
 * hidden from their own expansion), then the arithmetic in 64-bit signed
 * integers. The third collects the names the kept lines read, closes them
 * over the bodies of the macros they name, and writes the text.
 *
 * Soundness rests on one rule: whatever is not handled exactly makes the
 * whole text NULL (st.fail), and the caller keys on the source as it is.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compile/canon.h"
#include "compile/ppexpr.h"
#include "util.h"

#define CANON_TAG "evoeng-canon-1\n"
#define MAX_DEPTH 64

typedef struct Line {
    char *text;     /* comments out, splices joined */
    int   nphys;    /* physical lines it spans */
    int   keep;     /* 1: written as it is */
    int   def;      /* index into defs of the #define on it, or -1 */
} Line;

typedef struct Macro {
    char  *name;
    int    fn;        /* function-like */
    char **params;
    int    nparams;
    char  *body;
    int    undone;    /* an #undef followed it */
    PpToks toks;      /* body's tokens, once lexed (lexed) */
    int    lexed;
} Macro;

typedef struct Set {
    char **slot;
    size_t cap, n;
} Set;

typedef struct Canon {
    Line       *lines;
    int         nlines, caplines;
    Macro      *defs;
    int         ndefs, capdefs;
    Set         touched;     /* every name the source #defines or #undefs */
    CanonLookup lookup;
    void       *ctx;
    int         fail;
    long        budget;      /* tokens expansion may still make */
} Canon;

/* ---- small containers ---------------------------------------------------- */


static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int set_has(const Set *s, const char *k)
{
    if (!s->cap)
        return 0;
    for (size_t i = str_hash(k) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (!s->slot[i])
            return 0;
        if (strcmp(s->slot[i], k) == 0)
            return 1;
    }
}

/* Adds k (copied); returns 1 when it was new. */
static int set_add(Set *s, const char *k)
{
    if (set_has(s, k))
        return 0;
    if (2 * (s->n + 1) > s->cap) {
        Set g = {xcalloc(s->cap ? 2 * s->cap : 64, sizeof(char *)), s->cap ? 2 * s->cap : 64, 0};
        for (size_t i = 0; i < s->cap; i++)
            if (s->slot[i]) {
                size_t j = str_hash(s->slot[i]) & (g.cap - 1);
                while (g.slot[j])
                    j = (j + 1) & (g.cap - 1);
                g.slot[j] = s->slot[i];
                g.n++;
            }
        free(s->slot);
        *s = g;
    }
    size_t i = str_hash(k) & (s->cap - 1);
    while (s->slot[i])
        i = (i + 1) & (s->cap - 1);
    s->slot[i] = xstrdup(k);
    s->n++;
    return 1;
}

static void set_free(Set *s)
{
    for (size_t i = 0; i < s->cap; i++)
        free(s->slot[i]);
    free(s->slot);
    memset(s, 0, sizeof(*s));
}

static void lex(Canon *st, const char *s, PpToks *t)
{
    if (pp_lex(s, t) < 0)
        st->fail = 1;
}

/* ---- logical lines --------------------------------------------------------- */

static void line_push(Canon *st, StrBuf *sb, int nphys)
{
    if (st->nlines == st->caplines) {
        st->caplines = st->caplines ? 2 * st->caplines : 256;
        st->lines = xrealloc(st->lines, (size_t)st->caplines * sizeof(Line));
    }
    Line *l = &st->lines[st->nlines++];
    l->text = sb_take(sb);
    l->nphys = nphys;
    l->keep = 0;
    l->def = -1;
}

/* Leading blanks of a logical line, then '#': a directive. */
static int starts_directive(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return *s == '#';
}

/* Cut src into st->lines. */
static void split_lines(Canon *st, const char *src)
{
    StrBuf sb = {0};
    int nphys = 1;
    size_t i = 0;
    while (src[i] && !st->fail) {
        char c = src[i];
        if (c == '\r') {
            st->fail = 1;   /* CR line ends: not handled here */
        } else if (c == '\\' && src[i + 1] == '\n') {
            i += 2;
            nphys++;
        } else if (c == '\n') {
            line_push(st, &sb, nphys);
            nphys = 1;
            i++;
        } else if (c == '/' && src[i + 1] == '*') {
            const char *e = strstr(src + i + 2, "*/");
            if (!e) {
                st->fail = 1;
                break;
            }
            int nl = 0;
            for (const char *p = src + i; p < e; p++)
                nl += *p == '\n';
            /* a comment that joins lines inside a directive continues it:
             * not handled here */
            if (nl && sb.s && starts_directive(sb.s)) {
                st->fail = 1;
                break;
            }
            nphys += nl;
            sb_putc(&sb, ' ');
            i = (size_t)(e - src) + 2;
        } else if (c == '/' && src[i + 1] == '/') {
            while (src[i] && src[i] != '\n') {
                if (src[i] == '\\' && src[i + 1] == '\n') {
                    i += 2;
                    nphys++;
                } else {
                    i++;
                }
            }
            sb_putc(&sb, ' ');
        } else if (c == '"' || c == '\'') {
            /* the word the quote follows, if it follows one at once: a
             * number (1'000: a digit separator) or an encoding prefix
             * (L'x', u8"s"; R"(: a raw string, not scanned here) */
            size_t k = sb.len;
            while (k > 0 && pp_is_id(sb.s[k - 1]))
                k--;
            size_t j = 0;
            if (c == '\'' && k < sb.len && pp_is_digit(sb.s[k]))
                sb_putc(&sb, c);
            else if (c == '"' && k < sb.len && pp_raw_prefix(sb.s + k, sb.len - k))
                st->fail = 1;
            else if (!(j = pp_skip_quoted(src, i)))
                st->fail = 1;   /* an unterminated literal, or a splice inside one */
            else
                sb_appendn(&sb, src + i, j - i);
            i = j ? j : i + 1;
        } else {
            sb_putc(&sb, c);
            i++;
        }
    }
    if (!st->fail && (sb.len || nphys > 1 || (i > 0 && src[i - 1] != '\n')))
        line_push(st, &sb, nphys);
    sb_free(&sb);
}

/* ---- macros ---------------------------------------------------------------- */

static Macro *current(Canon *st, const char *name)
{
    for (int i = st->ndefs - 1; i >= 0; i--)
        if (!st->defs[i].undone && strcmp(st->defs[i].name, name) == 0)
            return &st->defs[i];
    return NULL;
}

/* #define on line li: its text after "define". */
static void do_define(Canon *st, int li, const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = 0;
    while (pp_is_id(s[n]))
        n++;
    if (!n || pp_is_digit(s[0]) || st->ndefs >= 8192) {   /* the table is searched linearly */
        st->fail = 1;
        return;
    }
    Macro m = {0};
    m.name = xstrndup(s, n);
    s += n;
    if (*s == '(') {
        m.fn = 1;
        s++;
        for (;;) {
            while (*s == ' ' || *s == '\t')
                s++;
            if (*s == ')') {
                s++;
                break;
            }
            size_t k = 0;
            while (pp_is_id(s[k]))
                k++;
            if (!k) {          /* "...", or not a parameter list */
                st->fail = 1;
                break;
            }
            m.params = xrealloc(m.params, (size_t)(m.nparams + 1) * sizeof(char *));
            m.params[m.nparams++] = xstrndup(s, k);
            s += k;
            while (*s == ' ' || *s == '\t')
                s++;
            if (*s == ',')
                s++;
            else if (*s != ')')
                st->fail = 1;
            if (st->fail)
                break;
        }
    }
    while (*s == ' ' || *s == '\t')
        s++;
    m.body = xstrdup(s);
    if (st->ndefs == st->capdefs) {
        st->capdefs = st->capdefs ? 2 * st->capdefs : 64;
        st->defs = xrealloc(st->defs, (size_t)st->capdefs * sizeof(Macro));
    }
    Macro *old = current(st, m.name);
    if (old)
        old->undone = 1;
    set_add(&st->touched, m.name);
    st->lines[li].def = st->ndefs;
    st->defs[st->ndefs++] = m;
}

static void do_undef(Canon *st, const char *s)
{
    PpToks t = {0};
    lex(st, s, &t);
    if (t.n != 1 || t.v[0].type != PP_ID) {
        st->fail = 1;
    } else {
        Macro *m = current(st, t.v[0].s);
        if (m)
            m->undone = 1;
        set_add(&st->touched, t.v[0].s);
    }
    pptoks_free(&t);
}

/* Is name defined at this point? Sets st->fail when it cannot be told. */
static int is_defined(Canon *st, const char *name)
{
    if (set_has(&st->touched, name))
        return current(st, name) != NULL;
    int d = 0, hv = 0;
    long long v = 0;
    if (!st->lookup || st->lookup(st->ctx, name, &d, &hv, &v) < 0)
        st->fail = 1;
    return d;
}

static int has_hash(const PpToks *t)
{
    for (int i = 0; i < t->n; i++)
        if (t->v[i].type == PP_PUNCT && (strcmp(t->v[i].s, "#") == 0 || strcmp(t->v[i].s, "##") == 0))
            return 1;
    return 0;
}

/* The macros being expanded, innermost last: hidden from their own
 * expansion (at most MAX_DEPTH + 1 of them). */
typedef struct Hide {
    const char *name[MAX_DEPTH + 2];
    int         n;
} Hide;

static int hidden(const Hide *h, const char *name)
{
    for (int i = 0; i < h->n; i++)
        if (strcmp(h->name[i], name) == 0)
            return 1;
    return 0;
}

static void expand(Canon *st, const PpTok *in, int n, PpToks *out, Hide *hide, int depth);

/* Expand body (made from m) into out with m hidden. */
static void expand_body(Canon *st, const Macro *m, PpToks *body, PpToks *out, Hide *hide, int depth)
{
    hide->name[hide->n++] = m->name;
    expand(st, body->v, body->n, out, hide, depth + 1);
    hide->n--;
}

static void expand(Canon *st, const PpTok *in, int n, PpToks *out, Hide *hide, int depth)
{
    if (depth > MAX_DEPTH || (st->budget -= n) < 0) {
        st->fail = 1;   /* too deep, or too many tokens: not worth the time */
        return;
    }
    for (int i = 0; i < n && !st->fail; i++) {
        const PpTok *t = &in[i];
        if (t->type != PP_ID) {
            pptoks_push(out, t->type, t->s, strlen(t->s));
            continue;
        }
        if (strcmp(t->s, "defined") == 0) {   /* made by an expansion: not handled */
            st->fail = 1;
            return;
        }
        int hid = hidden(hide, t->s);
        Macro *m = hid ? NULL : current(st, t->s);
        if (!m || (m->fn && !(i + 1 < n && pp_is_punct(&in[i + 1], "(")))) {
            pptoks_push(out, hid ? PP_HIDDEN : PP_ID, t->s, strlen(t->s));
            continue;
        }
        PpToks sub = {0};
        if (!m->lexed) {
            lex(st, m->body, &m->toks);
            m->lexed = 1;
        }
        const PpToks body = m->toks;
        if (has_hash(&body))
            st->fail = 1;
        int end = i;
        if (!st->fail && m->fn) {
            /* the arguments: split at top-level commas up to the matching ')' */
            int level = 0, j = i + 1, a0 = i + 2, nargs = 0;
            PpToks *args = NULL;
            for (; j < n; j++) {
                if (pp_is_punct(&in[j], "("))
                    level++;
                else if (pp_is_punct(&in[j], ")") && --level == 0)
                    break;
                if (level == 1 && pp_is_punct(&in[j], ",")) {
                    args = xrealloc(args, (size_t)(nargs + 1) * sizeof(PpToks));
                    memset(&args[nargs], 0, sizeof(PpToks));
                    expand(st, in + a0, j - a0, &args[nargs++], hide, depth + 1);
                    a0 = j + 1;
                }
            }
            if (j >= n) {
                st->fail = 1;
            } else {
                if (j > a0 || nargs > 0 || m->nparams > 0) {
                    args = xrealloc(args, (size_t)(nargs + 1) * sizeof(PpToks));
                    memset(&args[nargs], 0, sizeof(PpToks));
                    expand(st, in + a0, j - a0, &args[nargs++], hide, depth + 1);
                }
                if (nargs != m->nparams)
                    st->fail = 1;
                for (int b = 0; b < body.n && !st->fail; b++) {
                    int p = -1;
                    for (int k = 0; body.v[b].type == PP_ID && k < m->nparams; k++)
                        if (strcmp(body.v[b].s, m->params[k]) == 0)
                            p = k;
                    if (p < 0)
                        pptoks_push(&sub, body.v[b].type, body.v[b].s, strlen(body.v[b].s));
                    else
                        for (int k = 0; k < args[p].n; k++)
                            pptoks_push(&sub, args[p].v[k].type, args[p].v[k].s, strlen(args[p].v[k].s));
                }
                end = j;
            }
            for (int k = 0; k < nargs; k++)
                pptoks_free(&args[k]);
            free(args);
        } else if (!st->fail) {
            for (int b = 0; b < body.n; b++)
                pptoks_push(&sub, body.v[b].type, body.v[b].s, strlen(body.v[b].s));
        }
        int before = out->n;
        if (!st->fail)
            expand_body(st, m, &sub, out, hide, depth);
        /* a function-like name left at the end, called by what follows:
         * the rescan would reach past the expansion; not handled */
        if (!st->fail && out->n > before && out->v[out->n - 1].type == PP_ID && end + 1 < n &&
            pp_is_punct(&in[end + 1], "(")) {
            Macro *f = current(st, out->v[out->n - 1].s);
            if (f && f->fn)
                st->fail = 1;
        }
        pptoks_free(&sub);
        i = end;
    }
}

/* A name left after expansion in an #if (PpIdent): 0 when the source
 * #undef'd it, the compiler's value for a name the source never touched,
 * else refused (a macro left unexpanded). */
static int ident_value(void *ctx, const PpTok *t, long long *v)
{
    Canon *st = ctx;
    *v = 0;
    if (t->type == PP_HIDDEN || set_has(&st->touched, t->s))
        return t->type != PP_HIDDEN && !current(st, t->s) ? 0 : -1;
    int d = 0, hv = 0;
    if (!st->lookup || st->lookup(st->ctx, t->s, &d, &hv, v) < 0)
        return -1;
    if (!d)
        *v = 0;
    return !d || hv ? 0 : -1;
}

/* The value of an #if or #elif condition (its text). */
static long long eval_if(Canon *st, const char *s)
{
    PpToks t = {0}, u = {0}, x = {0};
    long long v = 0;
    lex(st, s, &t);
    /* defined inside a function-like macro's arguments: compilers differ */
    int has_defined = 0, has_fn = 0;
    for (int i = 0; i < t.n; i++) {
        Macro *m = t.v[i].type == PP_ID ? current(st, t.v[i].s) : NULL;
        has_defined |= t.v[i].type == PP_ID && strcmp(t.v[i].s, "defined") == 0;
        has_fn |= m && m->fn;
    }
    if (has_defined && has_fn)
        st->fail = 1;
    for (int i = 0; i < t.n && !st->fail; i++) {
        if (t.v[i].type != PP_ID || strcmp(t.v[i].s, "defined") != 0) {
            pptoks_push(&u, t.v[i].type, t.v[i].s, strlen(t.v[i].s));
            continue;
        }
        int paren = i + 1 < t.n && pp_is_punct(&t.v[i + 1], "(");
        int k = i + 1 + paren;
        if (k >= t.n || t.v[k].type != PP_ID || (paren && !(k + 1 < t.n && pp_is_punct(&t.v[k + 1], ")")))) {
            st->fail = 1;
            break;
        }
        pptoks_push(&u, PP_NUM, is_defined(st, t.v[k].s) ? "1" : "0", 1);
        i = k + paren;
    }
    Hide hide = {{0}, 0};
    if (!st->fail)
        expand(st, u.v, u.n, &x, &hide, 0);
    if (!st->fail && pp_eval(x.v, x.n, ident_value, st, &v) < 0)
        st->fail = 1;
    pptoks_free(&t);
    pptoks_free(&u);
    pptoks_free(&x);
    return v;
}

/* ---- the directives --------------------------------------------------------------- */

typedef struct Cond {
    int on;      /* this branch is compiled */
    int taken;   /* some branch of the group was, or the group is inside a dead one */
    int seen_else;
} Cond;

/* The directive's name into name (empty for a null directive); returns
 * the text after it. */
static const char *directive(const char *s, char name[32])
{
    while (*s == ' ' || *s == '\t')
        s++;
    s++;   /* '#' */
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = 0;
    while (pp_is_id(s[n]) && n < 31)
        n++;
    memcpy(name, s, n);
    name[n] = 0;
    return s + n;
}

static void walk(Canon *st)
{
    Cond stack[256];
    int depth = 0, on = 1;
    for (int li = 0; li < st->nlines && !st->fail; li++) {
        Line *l = &st->lines[li];
        if (!starts_directive(l->text)) {
            l->keep = on;
            continue;
        }
        char name[32];
        const char *rest = directive(l->text, name);
        if (!strcmp(name, "elifdef") || !strcmp(name, "elifndef")) {
            st->fail = 1;   /* C++23's: not NVRTC's C++17 */
            break;
        }
        if (!strcmp(name, "if") || !strcmp(name, "ifdef") || !strcmp(name, "ifndef")) {
            if (depth == (int)(sizeof(stack) / sizeof(stack[0]))) {
                st->fail = 1;
                break;
            }
            int v = 0;
            if (on && !strcmp(name, "if")) {
                v = eval_if(st, rest) != 0;
            } else if (on) {
                PpToks t = {0};
                lex(st, rest, &t);
                if (t.n != 1 || t.v[0].type != PP_ID)
                    st->fail = 1;
                else
                    v = is_defined(st, t.v[0].s) == !strcmp(name, "ifdef");
                pptoks_free(&t);
            }
            stack[depth++] = (Cond){on && v, !on || v, 0};
        } else if (!strcmp(name, "elif") || !strcmp(name, "else")) {
            if (!depth || stack[depth - 1].seen_else) {
                st->fail = 1;
                break;
            }
            Cond *c = &stack[depth - 1];
            int parent = depth < 2 || stack[depth - 2].on;
            int v = 0;
            if (parent && !c->taken)
                v = name[1] == 'l' && name[2] == 'i' ? eval_if(st, rest) != 0 : 1;
            c->seen_else = name[2] == 's';
            c->on = v;
            c->taken |= v;
        } else if (!strcmp(name, "endif")) {
            if (!depth) {
                st->fail = 1;
                break;
            }
            depth--;
        } else if (!on) {
            /* a dead branch: nothing else in it counts */
        } else if (!strcmp(name, "define")) {
            do_define(st, li, rest);
        } else if (!strcmp(name, "undef")) {
            do_undef(st, rest);
            l->keep = 1;
        } else if (!strcmp(name, "line") || !strcmp(name, "pragma") || !strcmp(name, "error") ||
                   !strcmp(name, "warning") || !strcmp(name, "ident")) {
            l->keep = 1;
        } else if (name[0] || rest[strspn(rest, " \t")]) {
            st->fail = 1;   /* #include and the like: another file's text */
        }
        on = depth == 0 || stack[depth - 1].on;
    }
    if (depth)
        st->fail = 1;
}

/* ---- the names read, and the text ----------------------------------------------------- */

typedef struct Names {
    Set *refs;
    int *grew;
} Names;

static void add_name(void *ctx, const char *id, size_t n)
{
    Names *nm = ctx;
    char buf[256];
    if (n >= sizeof(buf)) {
        char *k = xstrndup(id, n);
        *nm->grew |= set_add(nm->refs, k);
        free(k);
        return;
    }
    memcpy(buf, id, n);
    buf[n] = 0;
    *nm->grew |= set_add(nm->refs, buf);
}

static void add_names(Canon *st, const char *s, Set *refs, int *grew)
{
    Names nm = {refs, grew};
    if (pp_idents(s, add_name, &nm) < 0)
        st->fail = 1;
}

char *canon_source(const char *src, CanonLookup lookup, void *ctx)
{
    Canon st = {0};
    st.lookup = lookup;
    st.ctx = ctx;
    st.budget = 500000;   /* the attention template needs under 50,000 */
    char *out = NULL;
    split_lines(&st, src ? src : "");
    if (!st.fail)
        walk(&st);
    Set refs = {0};
    int grew = 0;
    for (int i = 0; i < st.nlines && !st.fail; i++)
        if (st.lines[i].keep)
            add_names(&st, st.lines[i].text, &refs, &grew);
    /* close over the macros the kept text reads */
    char *used = xcalloc((size_t)st.ndefs + 1, 1);
    for (grew = 1; grew && !st.fail;) {
        grew = 0;
        for (int d = 0; d < st.ndefs && !st.fail; d++)
            if (!used[d] && set_has(&refs, st.defs[d].name)) {
                used[d] = 1;
                add_names(&st, st.defs[d].body, &refs, &grew);
                grew = 1;
            }
    }
    if (!st.fail) {
        StrBuf sb = {0};
        sb_append(&sb, CANON_TAG);
        for (int i = 0; i < st.nlines; i++) {
            const Line *l = &st.lines[i];
            if (l->keep || (l->def >= 0 && used[l->def]))
                sb_append(&sb, l->text);
            for (int k = 0; k < l->nphys; k++)
                sb_putc(&sb, '\n');
        }
        out = sb_take(&sb);
    }
    free(used);
    set_free(&refs);
    set_free(&st.touched);
    for (int i = 0; i < st.nlines; i++)
        free(st.lines[i].text);
    free(st.lines);
    for (int d = 0; d < st.ndefs; d++) {
        free(st.defs[d].name);
        free(st.defs[d].body);
        pptoks_free(&st.defs[d].toks);
        for (int k = 0; k < st.defs[d].nparams; k++)
            free(st.defs[d].params[k]);
        free(st.defs[d].params);
    }
    free(st.defs);
    return out;
}
