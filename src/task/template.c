/*
 * template: rendering (prepend #defines and a #line directive), content
 * hashes, and a scan for the `#ifndef X / #define X` knobs of a template.
 * See template.h.
 */
#include "task/template.h"

#include "task/confine.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int template_is_ident(const char *s)
{
    if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
        return 0;
    for (s++; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return 0;
    return 1;
}

/* The last path component of file, or "template" for NULL: the name that
 * #line directives give. */
static const char *file_base(const char *file)
{
    const char *base = file ? file : "template";
    const char *slash = strrchr(base, '/');
    return slash ? slash + 1 : base;
}

int template_render(const char *template_text, const char *file, const char *const *names,
                    const int64_t *values, int n, char **out, EvoErr *err)
{
    StrBuf sb = {0};
    const char *base = file_base(file);
    *out = NULL;
    if (strpbrk(base, "\"\n\r\\")) {
        err_set(err, "template_render: file name '%s' holds a quote, backslash or newline", base);
        goto fail;
    }
    sb_printf(&sb, "// evoeng: rendered from %s\n", base);
    for (int i = 0; i < n; i++) {
        if (!template_is_ident(names[i])) {
            err_set(err, "template_render: '%s' is not a valid macro name", names[i] ? names[i] : "(null)");
            goto fail;
        }
        if (values[i] < 0)
            sb_printf(&sb, "#define %s (%lld)\n", names[i], (long long)values[i]);
        else
            sb_printf(&sb, "#define %s %lld\n", names[i], (long long)values[i]);
    }
    sb_printf(&sb, "#line 1 \"%s\"\n", base);
    sb_append(&sb, template_text ? template_text : "");
    if (sb.len == 0 || sb.s[sb.len - 1] != '\n')
        sb_putc(&sb, '\n');
    *out = sb_take(&sb);
    return 0;
fail:
    sb_free(&sb);
    return -1;
}

/* NAME of a line that is exactly `#include "NAME"` (blanks allowed around
 * it), copied into name[cap]; 0 when the line is something else or NAME
 * holds a path separator or a carriage return (not a file beside the
 * template, or not a name a #line directive can carry). */
static int local_include(const char *line, size_t len, char *name, size_t cap)
{
    const char *p = line, *end = line + len;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (p == end || *p++ != '#')
        return 0;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if ((size_t)(end - p) < 8 || strncmp(p, "include", 7) != 0)
        return 0;
    p += 7;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (p == end || *p++ != '"')
        return 0;
    const char *q = memchr(p, '"', (size_t)(end - p));
    if (!q || q == p || (size_t)(q - p) >= cap)
        return 0;
    for (const char *r = q + 1; r < end; r++)
        if (*r != ' ' && *r != '\t' && *r != '\r')
            return 0;
    memcpy(name, p, (size_t)(q - p));
    name[q - p] = '\0';
    return !strpbrk(name, "/\\\r");
}

static int expand(StrBuf *sb, const char *text, const char *file, const char *dir, const char **stack, int depth,
                  EvoErr *err)
{
    int lineno = 0;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char name[256], *path = NULL, *sub = NULL;
        lineno++;
        if (local_include(p, len, name, sizeof(name)) && (path = path_join(dir, name)) && access(path, F_OK) == 0) {
            /* a part beside the template: it too stays inside (confine.h) */
            EvoErr e;
            char *real = confine_resolve(dir, dir, name, &e);
            if (!real) {
                free(path);
                return err_set(err, "%s line %d: #include \"%s\": %s", file, lineno, name, e.msg);
            }
            free(path);
            path = real;
            for (int i = 0; i < depth; i++)
                if (strcmp(stack[i], name) == 0) {
                    free(path);
                    return err_set(err, "%s line %d: '%s' includes itself (through %s)", file, lineno, name,
                                   stack[depth - 1]);
                }
            if (depth >= 8) {
                free(path);
                return err_set(err, "%s line %d: includes nested more than 8 deep", file, lineno);
            }
            if (file_read(path, &sub, NULL, &e) < 0) {
                free(path);
                return err_set(err, "%s line %d: cannot read '%s': %s", file, lineno, name, e.msg);
            }
            stack[depth] = name;
            sb_printf(sb, "#line 1 \"%s\"\n", name);
            int rc = expand(sb, sub, name, dir, stack, depth + 1, err);
            free(sub);
            free(path);
            if (rc)
                return -1;
            if (sb->len == 0 || sb->s[sb->len - 1] != '\n')
                sb_putc(sb, '\n');
            sb_printf(sb, "#line %d \"%s\"\n", lineno + 1, file);
        } else {
            free(path);
            sb_appendn(sb, p, nl ? len + 1 : len);
        }
        p = nl ? nl + 1 : p + len;
    }
    return 0;
}

int template_expand(const char *text, const char *file, const char *dir, char **out, EvoErr *err)
{
    StrBuf sb = {0};
    const char *stack[8];
    *out = NULL;
    stack[0] = file_base(file);
    if (expand(&sb, text ? text : "", stack[0], dir ? dir : ".", stack, 1, err)) {
        sb_free(&sb);
        return -1;
    }
    *out = sb_take(&sb);
    return 0;
}

void template_hash(const char *src, char hex[65])
{
    sha256_hex(src, strlen(src), hex);
}

/* Skip spaces and tabs. */
static const char *skip_blank(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* If the line at p is a preprocessor directive `# word NAME`, copy NAME
 * into name (size bytes) and return 1. */
static int directive(const char *p, const char *word, char *name, size_t size)
{
    p = skip_blank(p);
    if (*p != '#')
        return 0;
    p = skip_blank(p + 1);
    size_t wl = strlen(word);
    if (strncmp(p, word, wl) != 0 || (p[wl] != ' ' && p[wl] != '\t'))
        return 0;
    p = skip_blank(p + wl);
    size_t k = 0;
    while ((isalnum((unsigned char)p[k]) || p[k] == '_') && k + 1 < size) {
        name[k] = p[k];
        k++;
    }
    name[k] = 0;
    return k > 0 && !isdigit((unsigned char)name[0]);
}

static const char *next_line(const char *p)
{
    const char *nl = strchr(p, '\n');
    return nl ? nl + 1 : NULL;
}

char **template_knobs(const char *template_text, int *n)
{
    char **names = xcalloc(1, sizeof(*names));
    int count = 0;
    const char *p = template_text;
    char a[128], b[128];
    while (p && *p) {
        const char *nl = next_line(p);
        if (directive(p, "ifndef", a, sizeof(a))) {
            const char *q = nl;
            while (q && *skip_blank(q) == '\n')
                q = next_line(q);
            if (q && directive(q, "define", b, sizeof(b)) && strcmp(a, b) == 0) {
                int dup = 0;
                for (int i = 0; i < count; i++)
                    dup |= strcmp(names[i], a) == 0;
                if (!dup) {
                    names = xrealloc(names, (size_t)(count + 2) * sizeof(*names));
                    names[count++] = xstrdup(a);
                    names[count] = NULL;
                }
            }
        }
        p = nl;
    }
    if (n)
        *n = count;
    return names;
}
