/*
 * clex: a small lexer for CUDA C++ source as people write it, shared by the
 * kernel-file readers (kfile: the device view and kernel signatures;
 * kscan: launchers, shared arrays, asserts). See clex.h.
 */
#include "compile/clex.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

int clex_is_ident(int c)
{
    return isalnum(c) || c == '_';
}

/* 1 when only blanks precede s[i] on its line. */
static int at_line_start(const char *s, size_t i)
{
    while (i > 0 && (s[i - 1] == ' ' || s[i - 1] == '\t'))
        i--;
    return i == 0 || s[i - 1] == '\n';
}

/* When s[i] starts a comment, a string, a character literal or a
 * preprocessor line, the index just after it (a line comment or a directive
 * stops before its newline); else i. */
size_t clex_skip(const char *s, size_t n, size_t i)
{
    char c = s[i];
    if (c == '/' && i + 1 < n && s[i + 1] == '/') {
        while (i < n && s[i] != '\n')
            i++;
        return i;
    }
    if (c == '/' && i + 1 < n && s[i + 1] == '*') {
        const char *e = strstr(s + i + 2, "*/");
        return e ? (size_t)(e - s) + 2 : n;
    }
    if (c == '#' && at_line_start(s, i)) {
        while (i < n && s[i] != '\n') {
            if (s[i] == '\\' && i + 1 < n && s[i + 1] == '\n')
                i++;
            else if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
                i = clex_skip(s, n, i);
                continue;
            }
            i++;
        }
        return i;
    }
    if (c == '"') {
        if (i > 0 && s[i - 1] == 'R' && (i < 2 || !clex_is_ident((unsigned char)s[i - 2]) || s[i - 2] == '8' ||
                                         s[i - 2] == 'u' || s[i - 2] == 'U' || s[i - 2] == 'L')) {
            size_t p = i + 1;
            while (p < n && s[p] != '(' && p - i < 18)
                p++;
            char close[24];
            snprintf(close, sizeof(close), ")%.*s\"", (int)(p - i - 1), s + i + 1);
            const char *e = strstr(s + p, close);
            return e ? (size_t)(e - s) + strlen(close) : n;
        }
        for (i++; i < n && s[i] != '"' && s[i] != '\n'; i++)
            if (s[i] == '\\' && i + 1 < n)
                i++;
        return i < n ? i + 1 : n;
    }
    if (c == '\'') {
        /* A digit separator (1'000'000) is not a literal. */
        size_t b = i;
        while (b > 0 && (clex_is_ident((unsigned char)s[b - 1]) || s[b - 1] == '.'))
            b--;
        if (b < i && isdigit((unsigned char)s[b]))
            return i + 1;
        for (i++; i < n && s[i] != '\'' && s[i] != '\n'; i++)
            if (s[i] == '\\' && i + 1 < n)
                i++;
        return i < n ? i + 1 : n;
    }
    return i;
}

/* Index of the '}' matching the '{' at s[i], or n when unbalanced. */
size_t clex_match_brace(const char *s, size_t n, size_t i)
{
    int depth = 0;
    while (i < n) {
        size_t j = clex_skip(s, n, i);
        if (j != i) {
            i = j;
            continue;
        }
        if (s[i] == '{')
            depth++;
        else if (s[i] == '}' && --depth == 0)
            return i;
        i++;
    }
    return n;
}

/* s[a..b) without comments, strings and preprocessor lines (each replaced
 * by one space; a string by "S", so extern "C" reads extern S). Fresh. */
char *clex_code_only(const char *s, size_t a, size_t b)
{
    StrBuf sb = {0};
    for (size_t i = a; i < b;) {
        size_t j = clex_skip(s, b, i);
        if (j != i) {
            sb_append(&sb, s[i] == '"' ? " S " : " ");
            i = j;
            continue;
        }
        sb_putc(&sb, s[i]);
        i++;
    }
    return sb_take(&sb);
}

/* 1 when the word w occurs in text as a whole identifier. */
int clex_has_word(const char *text, const char *w)
{
    size_t wl = strlen(w);
    for (const char *p = strstr(text, w); p; p = strstr(p + 1, w)) {
        if ((p == text || !clex_is_ident((unsigned char)p[-1])) && !clex_is_ident((unsigned char)p[wl]))
            return 1;
    }
    return 0;
}

/* 1 when code (comment- and string-free) calls an identifier that starts
 * with prefix and then an upper-case letter: cudaMalloc(, cuLaunchKernel(. */
int clex_calls_api(const char *code, const char *prefix)
{
    size_t pl = strlen(prefix);
    for (const char *p = strstr(code, prefix); p; p = strstr(p + 1, prefix)) {
        if ((p > code && clex_is_ident((unsigned char)p[-1])) || !isupper((unsigned char)p[pl]))
            continue;
        const char *q = p + pl;
        while (clex_is_ident((unsigned char)*q))
            q++;
        while (*q == ' ' || *q == '\t' || *q == '\n')
            q++;
        if (*q == '(')
            return 1;
    }
    return 0;
}

enum { HEAD_OTHER, HEAD_SCOPE, HEAD_FUNCTION };

/* What the declaration head (code only) before a '{' opens. */
static int head_kind(const char *head)
{
    char w[32] = "";
    const char *p = head;
    while (*p && !clex_is_ident((unsigned char)*p) && *p != '(' && *p != '=')
        p++;
    size_t k = 0;
    while (clex_is_ident((unsigned char)p[k]) && k < sizeof(w) - 1) {
        w[k] = p[k];
        k++;
    }
    w[k] = '\0';
    if (strcmp(w, "namespace") == 0 || (strcmp(w, "inline") == 0 && clex_has_word(head, "namespace")))
        return strchr(head, '=') ? HEAD_OTHER : HEAD_SCOPE;
    /* extern "C" { ... } (clex_code_only made the string an S) */
    if (strcmp(w, "extern") == 0) {
        const char *q = p + k;
        while (*q == ' ' || *q == '\t' || *q == '\n')
            q++;
        if (*q == 'S') {
            q++;
            while (*q == ' ' || *q == '\t' || *q == '\n')
                q++;
            if (*q == '\0')
                return HEAD_SCOPE;
        }
    }
    if (strcmp(w, "struct") == 0 || strcmp(w, "class") == 0 || strcmp(w, "union") == 0 || strcmp(w, "enum") == 0)
        return HEAD_OTHER;
    /* a function: a parameter list, and no '=' outside parentheses (nor in
     * a template parameter list, which may hold defaults: N = 4) */
    int depth = 0, paren = 0;
    const char *from = head;
    if (strcmp(w, "template") == 0 && (from = strchr(p, '<')) != NULL) {
        int d = 0;
        for (; *from; from++) {
            if (*from == '<' || *from == '(')
                d++;
            else if ((*from == '>' || *from == ')') && --d == 0)
                break;
        }
        if (!*from)
            return HEAD_OTHER;
    } else {
        from = head;
    }
    for (const char *q = from; *q; q++) {
        if (*q == '(') {
            depth++;
            paren = 1;
        } else if (*q == ')') {
            depth--;
        } else if (*q == '=' && depth == 0) {
            return HEAD_OTHER;
        }
    }
    return paren ? HEAD_FUNCTION : HEAD_OTHER;
}

/* 1 when the head (code only: strings read S) says extern "C". */
int clex_has_extern_c(const char *head)
{
    for (const char *p = strstr(head, "extern"); p; p = strstr(p + 6, "extern")) {
        if (p > head && clex_is_ident((unsigned char)p[-1]))
            continue;
        const char *q = p + 6;
        while (*q == ' ' || *q == '\t' || *q == '\n')
            q++;
        if (q > p + 6 && *q == 'S' && !clex_is_ident((unsigned char)q[1]))
            return 1;
    }
    return 0;
}


#define MAX_SCOPES 64

/* The namespace a scope head opens ("" for extern "C" and anonymous ones). */
static void scope_name(const char *head, char *out, size_t size)
{
    out[0] = '\0';
    const char *p = strstr(head, "namespace");
    if (!p)
        return;
    p += 9;
    size_t k = 0;
    while (*p && k + 1 < size) {
        if (clex_is_ident((unsigned char)*p) || *p == ':')
            out[k++] = *p;
        else if (!isspace((unsigned char)*p))
            break;
        p++;
    }
    out[k] = '\0';
}

/* Call visit for every function definition at file scope, in namespaces
 * or in extern "C" blocks. */
void clex_walk_functions(const char *src, ClexFnVisit visit, void *ctx)
{
    size_t n = strlen(src), decl = 0;
    size_t marks[MAX_SCOPES];
    int cblock[MAX_SCOPES];    /* 1: that scope is an extern "C" block */
    char ns[512] = "";
    int scopes = 0, in_c = 0;
    for (size_t i = 0; i < n;) {
        size_t j = clex_skip(src, n, i);
        if (j != i) {
            if (src[i] == '#')
                decl = j;              /* a directive ends whatever came before */
            i = j;
            continue;
        }
        char c = src[i];
        if (c == ';') {
            decl = i + 1;
        } else if (c == '}') {
            if (scopes > 0) {
                ns[marks[--scopes]] = '\0';
                in_c -= cblock[scopes];
            }
            decl = i + 1;
        } else if (c == '{') {
            char *head = clex_code_only(src, decl, i);
            int kind = head_kind(head);
            if (kind == HEAD_SCOPE && scopes < MAX_SCOPES) {
                char name[256];
                scope_name(head, name, sizeof(name));
                cblock[scopes] = clex_has_extern_c(head);
                in_c += cblock[scopes];
                marks[scopes++] = strlen(ns);
                if (name[0] && strlen(ns) + strlen(name) + 3 < sizeof(ns))
                    snprintf(ns + strlen(ns), sizeof(ns) - strlen(ns), "%s%s", ns[0] ? "::" : "", name);
                decl = i + 1;
                free(head);
                i++;
                continue;
            }
            size_t end = clex_match_brace(src, n, i);
            if (kind == HEAD_FUNCTION && end < n)
                visit(ctx, head, decl, i, end, ns, in_c > 0);
            free(head);
            if (end >= n)
                break;
            i = end + 1;
            decl = i;
            continue;
        }
        i++;
    }
}

char *clex_trim(const char *a, const char *b)
{
    while (a < b && isspace((unsigned char)*a))
        a++;
    while (b > a && isspace((unsigned char)b[-1]))
        b--;
    /* collapse runs of blanks */
    StrBuf sb = {0};
    for (const char *p = a; p < b; p++) {
        if (isspace((unsigned char)*p)) {
            if (sb.len && sb.s[sb.len - 1] != ' ')
                sb_putc(&sb, ' ');
        } else {
            sb_putc(&sb, *p);
        }
    }
    return sb.len ? sb_take(&sb) : (sb_free(&sb), xstrdup(""));
}

/* Split s[a..b) at top-level commas (not inside (), <>, [] or {}); call
 * add(ctx, part_begin, part_end) per part. */
void clex_split_commas(const char *a, const char *b, void (*add)(void *, const char *, const char *), void *ctx)
{
    int depth = 0;
    const char *start = a;
    for (const char *p = a; p < b; p++) {
        if (*p == '(' || *p == '<' || *p == '[' || *p == '{')
            depth++;
        else if (*p == ')' || *p == '>' || *p == ']' || *p == '}')
            depth--;
        else if (*p == ',' && depth == 0) {
            add(ctx, start, p);
            start = p + 1;
        }
    }
    if (b > start)
        add(ctx, start, b);
}

/* The last identifier of s[a..b) (a declarator's name), or NULL when the
 * text is one word only (an unnamed parameter: "float *" has none). */
char *clex_last_ident(const char *a, const char *b, const char **name_at)
{
    const char *e = b;
    while (e > a && isspace((unsigned char)e[-1]))
        e--;
    while (e > a && e[-1] == ']') {          /* float x[4] */
        while (e > a && e[-1] != '[')
            e--;
        if (e > a)
            e--;
        while (e > a && isspace((unsigned char)e[-1]))
            e--;
    }
    const char *p = e;
    while (p > a && clex_is_ident((unsigned char)p[-1]))
        p--;
    if (p == e || isdigit((unsigned char)*p))
        return NULL;
    const char *q = p;
    while (q > a && isspace((unsigned char)q[-1]))
        q--;
    if (q == a)
        return NULL;                           /* a type alone */
    *name_at = p;
    return xstrndup(p, (size_t)(e - p));
}

const char *clex_skip_blanks(const char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

long clex_match_paren(const char *s, size_t i)
{
    int depth = 0;
    for (size_t k = i; s[k]; k++) {
        if (s[k] == '(')
            depth++;
        else if (s[k] == ')' && --depth == 0)
            return (long)k;
    }
    return -1;
}

long clex_match_paren_back(const char *s, size_t i)
{
    int depth = 0;
    for (long k = (long)i; k >= 0; k--) {
        if (s[k] == ')')
            depth++;
        else if (s[k] == '(' && --depth == 0)
            return k;
    }
    return -1;
}

void clex_word_before(const char *s, size_t i, char *out, size_t size)
{
    size_t e = i;
    while (e > 0 && isspace((unsigned char)s[e - 1]))
        e--;
    size_t b = e;
    while (b > 0 && clex_is_ident((unsigned char)s[b - 1]))
        b--;
    size_t n = e - b < size - 1 ? e - b : size - 1;
    memcpy(out, s + b, n);
    out[n] = '\0';
}

size_t clex_define_name(const char *line, const char **name, const char **after)
{
    const char *p = line;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p++ != '#')
        return 0;
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncmp(p, "define", 6) != 0 || (p[6] != ' ' && p[6] != '\t'))
        return 0;
    p += 6;
    while (*p == ' ' || *p == '\t')
        p++;
    const char *e = p;
    while (clex_is_ident((unsigned char)*e))
        e++;
    if (e == p || isdigit((unsigned char)*p))
        return 0;
    *name = p;
    *after = e;
    return (size_t)(e - p);
}
