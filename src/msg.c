/*
 * msg: the one place that writes diagnostics, and result lines cut to the
 * terminal width with the --json document. See msg.h.
 */
#include "msg.h"

#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int msg_verbosity = 1;

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static int             keeping;
static char          **kept;
static int             nkept;

void msg_keep_errors(void)
{
    keeping = 1;
}

const char *const *msg_errors(int *n)
{
    *n = nkept;
    return (const char *const *)kept;
}

static void vmsg(const char *kind, const char *fmt, va_list ap)
{
    fflush(stdout);
    fputs("evoeng: ", stderr);
    if (kind)
        fputs(kind, stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    fflush(stderr);
}

void errorf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg(NULL, fmt, ap);
    va_end(ap);
    if (!keeping)
        return;
    StrBuf sb = {0};
    va_start(ap, fmt);
    sb_vprintf(&sb, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&kept_lock);
    kept = xrealloc(kept, (size_t)(nkept + 1) * sizeof(*kept));
    kept[nkept++] = sb.s ? sb_take(&sb) : xstrdup("");
    pthread_mutex_unlock(&kept_lock);
}

void warnf(const char *fmt, ...)
{
    if (msg_verbosity < 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    vmsg("warning: ", fmt, ap);
    va_end(ap);
}

void notef(const char *fmt, ...)
{
    if (msg_verbosity < 2)
        return;
    va_list ap;
    va_start(ap, fmt);
    vmsg("note: ", fmt, ap);
    va_end(ap);
}

void progressf(const char *fmt, ...)
{
    if (msg_verbosity < 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    vmsg(NULL, fmt, ap);
    va_end(ap);
}

/* ---- result lines on stdout ------------------------------------------------ */

static int width_now;

int out_width_for(int fd, int wide)
{
    if (wide)
        return 0;
    int tty = isatty(fd);
    struct winsize ws;
    if (tty && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *env = getenv("COLUMNS");
    long v;
    if (env && parse_long(env, 1, 100000, &v) == 0)
        return (int)v < 20 ? 20 : (int)v;   /* room for the start of a line */
    return tty ? 100 : 0;
}

void out_init(int wide)
{
    width_now = out_width_for(STDOUT_FILENO, wide);
}

int out_width(void)
{
    return width_now;
}

/* Display columns of s[0..n): UTF-8 continuation bytes do not count. */
static int columns(const char *s, size_t n)
{
    int c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xc0) != 0x80;
    return c;
}

char *out_fit(const char *line, int width)
{
    size_t n = strlen(line);
    if (width <= 0 || columns(line, n) <= width)
        return xstrdup(line);
    int keep = width > 3 ? width - 3 : 0;
    size_t i = 0;
    for (int c = 0; i < n; i++) {
        if (((unsigned char)line[i] & 0xc0) != 0x80 && c++ == keep)
            break;
    }
    char *out = xmalloc(i + 4);
    memcpy(out, line, i);
    memcpy(out + i, "...", 4);
    if (width < 3)
        out[width] = '\0';
    return out;
}

void out_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = xvasprintf(fmt, ap);
    va_end(ap);
    if (width_now <= 0) {
        fputs(text, stdout);
        free(text);
        return;
    }
    for (char *p = text; *p;) {
        char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char save = p[len];
        p[len] = '\0';
        char *cut = out_fit(p, width_now);
        fputs(cut, stdout);
        free(cut);
        p[len] = save;
        if (!nl)
            break;
        fputc('\n', stdout);
        p = nl + 1;
    }
    free(text);
}

/* ---- --json documents ------------------------------------------------------ */

static json_t *json_doc;

/* A JSON string of a message, which may hold bytes that are not UTF-8. */
static json_t *message_json(const char *m)
{
    json_t *j = json_string(m);
    return j ? j : json_string("(a message that is not valid UTF-8: see stderr)");
}

void out_json_doc(json_t *doc)
{
    json_decref(json_doc);
    json_doc = doc;
}

void out_json_end(int rc)
{
    int n = 0;
    const char *const *msgs = msg_errors(&n);
    json_t *doc = json_doc;
    json_doc = NULL;
    if (!doc && rc == 0)
        return;
    if (!doc)
        doc = json_object();
    if (rc != 0) {
        json_object_set_new(doc, "error", message_json(n > 0 ? msgs[0] : "the command failed"));
        json_object_set_new(doc, "exit", json_integer(rc));
        if (n > 1) {
            json_t *all = json_array();
            for (int i = 0; i < n; i++)
                json_array_append_new(all, message_json(msgs[i]));
            json_object_set_new(doc, "messages", all);
        }
    }
    char *txt = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    printf("%s\n", txt ? txt : "null");
    free(txt);
    json_decref(doc);
}
