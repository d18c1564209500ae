/*
 * extract: find the kernel and the rationale in an LLM answer, and check
 * the kernel's entry points. The rules (which block, host code) are in
 * extract.h. Everything here is plain string scanning: no regex library.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "llm/extract.h"

typedef struct Block {
    size_t start, end;   /* body: [start, end) in the reply */
    size_t outer_start;  /* the opening fence line's start */
    size_t outer_end;    /* just past the closing fence line */
    char   tag[32];
} Block;

/* ---- small scanners --------------------------------------------------- */

static int is_ident(int c)
{
    return isalnum(c) || c == '_';
}

/* Length of the line starting at p (without its newline). */
static size_t line_len(const char *p)
{
    const char *e = strchr(p, '\n');
    return e ? (size_t)(e - p) : strlen(p);
}

/* If the line at p is a fence, return the fence run length and its
 * character, with *info pointing after the run; else 0. */
static size_t fence_at(const char *p, size_t len, char *ch, const char **info)
{
    size_t i = 0, n = 0;
    while (i < len && i < 3 && p[i] == ' ')
        i++;
    if (i >= len || (p[i] != '`' && p[i] != '~'))
        return 0;
    *ch = p[i];
    while (i + n < len && p[i + n] == *ch)
        n++;
    if (n < 3)
        return 0;
    *info = p + i + n;
    return n;
}

static int tag_accepted(const char *tag)
{
    static const char *const ok[] = {"", "cuda", "cu", "cuh", "c++", "cpp", "cxx", "cc", "c", NULL};
    for (int i = 0; ok[i]; i++)
        if (strcmp(tag, ok[i]) == 0)
            return 1;
    return 0;
}

/* Copy of code with comments replaced by spaces (string and character
 * literals are kept as they are). */
static char *strip_comments(const char *code)
{
    size_t n = strlen(code);
    char *s = xstrdup(code);
    size_t i = 0;
    while (i < n) {
        if (s[i] == '"' || s[i] == '\'') {
            char q = s[i++];
            while (i < n && s[i] != q && s[i] != '\n') {
                if (s[i] == '\\' && i + 1 < n)
                    i++;
                i++;
            }
            if (i < n)
                i++;
        } else if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
            while (i < n && s[i] != '\n')
                s[i++] = ' ';
        } else if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
            s[i] = s[i + 1] = ' ';
            i += 2;
            while (i < n && !(s[i] == '*' && i + 1 < n && s[i + 1] == '/')) {
                if (s[i] != '\n')
                    s[i] = ' ';
                i++;
            }
            if (i < n) {
                s[i] = s[i + 1] = ' ';
                i += 2;
            }
        } else {
            i++;
        }
    }
    return s;
}

/* Find `word` as a whole identifier in s[from..to); returns its offset or -1. */
static long find_word(const char *s, size_t from, size_t to, const char *word)
{
    size_t wl = strlen(word);
    for (size_t i = from; i + wl <= to; i++) {
        if (memcmp(s + i, word, wl) != 0)
            continue;
        if (i > 0 && is_ident((unsigned char)s[i - 1]))
            continue;
        if (i + wl < to && is_ident((unsigned char)s[i + wl]))
            continue;
        return (long)i;
    }
    return -1;
}

/* 1 when s[from..to) holds `extern "C"` (any whitespace between). */
static int has_extern_c(const char *s, size_t from, size_t to, int need_brace)
{
    long at;
    size_t pos = from;
    while ((at = find_word(s, pos, to, "extern")) >= 0) {
        size_t i = (size_t)at + 6;
        while (i < to && isspace((unsigned char)s[i]))
            i++;
        if (i + 3 <= to && memcmp(s + i, "\"C\"", 3) == 0) {
            if (!need_brace)
                return 1;
            i += 3;
            while (i < to && isspace((unsigned char)s[i]))
                i++;
            if (i < to && s[i] == '{')
                return 1;
        }
        pos = (size_t)at + 6;
    }
    return 0;
}

/* ---- entry points and host code --------------------------------------- */

/* The next word `name` at or after *pos in s[0..n) that a '(' follows
 * (spaces between allowed): its offset, *pos moved past it; -1 when none. */
static long find_call(const char *s, size_t n, const char *name, size_t *pos)
{
    long at;
    while ((at = find_word(s, *pos, n, name)) >= 0) {
        size_t i = (size_t)at + strlen(name);
        *pos = i;
        while (i < n && isspace((unsigned char)s[i]))
            i++;
        if (i < n && s[i] == '(')
            return at;
    }
    return -1;
}

int extract_has_entry(const char *code, const char *name)
{
    char *s = strip_comments(code);
    size_t n = strlen(s);
    size_t pos = 0;
    long at;
    int found = 0;
    while (!found && (at = find_call(s, n, name, &pos)) >= 0) {
        /* The declaration runs back to the previous ; { or }. */
        size_t b = (size_t)at;
        while (b > 0 && s[b - 1] != ';' && s[b - 1] != '{' && s[b - 1] != '}')
            b--;
        if (find_word(s, b, (size_t)at, "__global__") < 0 || find_word(s, b, (size_t)at, "void") < 0)
            continue;
        if (has_extern_c(s, b, (size_t)at, 0) || has_extern_c(s, 0, b, 1))
            found = 1;
    }
    free(s);
    return found;
}

/* 1 when code defines `int main(` or `void main(`. */
static int has_main(const char *code)
{
    char *s = strip_comments(code);
    size_t n = strlen(s), pos = 0;
    long at;
    int found = 0;
    while (!found && (at = find_call(s, n, "main", &pos)) >= 0) {
        size_t b = (size_t)at;
        while (b > 0 && isspace((unsigned char)s[b - 1]))
            b--;
        if ((b >= 3 && memcmp(s + b - 3, "int", 3) == 0) || (b >= 4 && memcmp(s + b - 4, "void", 4) == 0))
            found = 1;
    }
    free(s);
    return found;
}

/* ---- rationale -------------------------------------------------------- */

/* Append prose, squeezing runs of blank lines to one. */
static char *make_rationale(const char *reply, const Block *blocks, int nblocks, size_t max)
{
    StrBuf raw = {0}, out = {0};
    size_t pos = 0;
    for (int i = 0; i < nblocks; i++) {
        sb_appendn(&raw, reply + pos, blocks[i].outer_start - pos);
        sb_putc(&raw, '\n');
        pos = blocks[i].outer_end;
    }
    sb_append(&raw, reply + pos);
    const char *s = raw.s ? raw.s : "";
    int newlines = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '\r')
            continue;
        if (*p == '\n') {
            newlines++;
            continue;
        }
        if (newlines && out.len)
            sb_appendn(&out, "\n\n", newlines > 1 ? 2 : 1);
        newlines = 0;
        sb_putc(&out, *p);
    }
    sb_free(&raw);
    char *r = sb_take(&out);
    /* trim */
    size_t b = 0, e = strlen(r);
    while (b < e && isspace((unsigned char)r[b]))
        b++;
    while (e > b && isspace((unsigned char)r[e - 1]))
        e--;
    int cut = 0;
    if (max && e - b > max) {
        e = b + max;
        while (e > b && ((unsigned char)r[e] & 0xC0) == 0x80)
            e--;  /* do not split a UTF-8 sequence */
        cut = 1;
    }
    char *t = cut ? xasprintf("%.*s [...]", (int)(e - b), r + b) : xstrndup(r + b, e - b);
    free(r);
    return t;
}

/* ---- the extractor ---------------------------------------------------- */

static void describe_start(const char *reply, char *buf, size_t cap)
{
    size_t j = 0, i = 0, end = strlen(reply);
    while (end > 0 && isspace((unsigned char)reply[end - 1]))
        end--;
    while (i < end && isspace((unsigned char)reply[i]))
        i++;
    for (; i < end && j + 4 < cap && j < 40; i++)
        buf[j++] = (reply[i] == '\n' || reply[i] == '\r' || reply[i] == '\t') ? ' ' : reply[i];
    if (i < end)
        buf[j++] = '.', buf[j++] = '.', buf[j++] = '.';
    buf[j] = 0;
}

/* The block to take: among those whose tag is accepted, one that defines
 * every entry point before one that does not, then the longest. -1: no
 * block has an accepted tag. */
static int pick_block(const char *reply, const Block *blocks, int nblocks, const char *const *entries, int nentries)
{
    int best = -1, best_full = 0;
    size_t best_size = 0;
    for (int i = 0; i < nblocks; i++) {
        if (!tag_accepted(blocks[i].tag))
            continue;
        char *code = xstrndup(reply + blocks[i].start, blocks[i].end - blocks[i].start);
        int full = 1;
        for (int k = 0; k < nentries && full; k++)
            full = extract_has_entry(code, entries[k]);
        free(code);
        size_t size = blocks[i].end - blocks[i].start;
        if (best < 0 || full > best_full || (full == best_full && size > best_size)) {
            best = i;
            best_full = full;
            best_size = size;
        }
    }
    return best;
}

int extract_reply(const char *reply, const char *const *entries, int nentries,
                  size_t rationale_max, Extracted *out, EvoErr *err)
{
    Block *blocks = NULL;
    int nblocks = 0, cap = 0, rc = -1;
    size_t pos = 0, len = strlen(reply);
    int line = 1, open_line = 0;

    memset(out, 0, sizeof *out);
    out->status = EXTRACT_NO_CODE;

    /* Pass 1: the fenced blocks. */
    while (pos < len) {
        size_t ll = line_len(reply + pos);
        char ch = 0;
        const char *info = NULL;
        size_t fl = fence_at(reply + pos, ll, &ch, &info);
        if (fl) {
            Block b = {0};
            b.outer_start = pos;
            const char *ie = reply + pos + ll;
            while (info < ie && isspace((unsigned char)*info))
                info++;
            size_t tl = 0;
            while (info + tl < ie && !isspace((unsigned char)info[tl]) && info[tl] != '{' && tl + 1 < sizeof b.tag) {
                b.tag[tl] = (char)tolower((unsigned char)info[tl]);
                tl++;
            }
            b.tag[tl] = 0;
            open_line = line;
            pos += ll + (reply[pos + ll] ? 1 : 0);
            line++;
            b.start = pos;
            int closed = 0;
            while (pos < len) {
                size_t l2 = line_len(reply + pos);
                char c2 = 0;
                const char *i2 = NULL;
                size_t f2 = fence_at(reply + pos, l2, &c2, &i2);
                int blank_after = 1;
                for (const char *q = i2; f2 && q < reply + pos + l2; q++)
                    if (!isspace((unsigned char)*q))
                        blank_after = 0;
                if (f2 && c2 == ch && f2 >= fl && blank_after) {
                    b.end = pos;
                    pos += l2 + (reply[pos + l2] ? 1 : 0);
                    line++;
                    b.outer_end = pos;
                    closed = 1;
                    break;
                }
                pos += l2 + (reply[pos + l2] ? 1 : 0);
                line++;
            }
            if (!closed) {
                err_set(err, "the code block opened at line %d of the reply is never closed (truncated reply?)", open_line);
                goto done;
            }
            if (nblocks == cap) {
                cap = cap ? 2 * cap : 4;
                blocks = xrealloc(blocks, (size_t)cap * sizeof *blocks);
            }
            blocks[nblocks++] = b;
            continue;
        }
        pos += ll + (reply[pos + ll] ? 1 : 0);
        line++;
    }
    out->nblocks = nblocks;

    /* Pass 2: choose the kernel. */
    int best = pick_block(reply, blocks, nblocks, entries, nentries);
    if (best < 0) {
        char start[64];
        describe_start(reply, start, sizeof start);
        if (nblocks == 0) {
            err_set(err, "no fenced code block in the reply (%zu characters, starts \"%s\")", len, start);
        } else {
            StrBuf tags = {0};
            for (int i = 0; i < nblocks; i++)
                sb_printf(&tags, "%s%s", i ? ", " : "", blocks[i].tag);
            err_set(err, "no CUDA code block in the reply (%d fenced block%s, tagged %s)",
                    nblocks, nblocks == 1 ? "" : "s", tags.s);
            sb_free(&tags);
        }
        goto done;
    }
    out->code = xstrndup(reply + blocks[best].start, blocks[best].end - blocks[best].start);
    out->lang = xstrdup(blocks[best].tag);

    for (int k = 0; k < nentries; k++) {
        if (!extract_has_entry(out->code, entries[k])) {
            out->status = EXTRACT_MISSING_ENTRY;
            err_set(err, "entry point '%s' not found in the proposed kernel", entries[k]);
            goto done;
        }
    }
    if (has_main(out->code)) {
        out->status = EXTRACT_HOST_CODE;
        err_set(err, "the proposed kernel defines main(): host code is not accepted");
        goto done;
    }
    out->status = EXTRACT_OK;
    rc = 0;
done:
    out->rationale = make_rationale(reply, blocks, nblocks, rationale_max);
    free(blocks);
    return rc;
}

void extract_free(Extracted *x)
{
    free(x->code);
    free(x->lang);
    free(x->rationale);
    memset(x, 0, sizeof *x);
}

const char *extract_status_name(ExtractStatus s)
{
    switch (s) {
    case EXTRACT_OK:            return "ok";
    case EXTRACT_NO_CODE:       return "no_code";
    case EXTRACT_MISSING_ENTRY: return "missing_entry";
    case EXTRACT_HOST_CODE:     return "host_code";
    }
    return "?";
}
