/* Unit tests for util: strings, SHA-256, strict number parsing, paths;
 * and device_cores, the compile farm's default size. */
#include "cli/cli.h"
#include "device.h"
#include "testhelp.h"
#include "testdata.h"
#include "util.h"

#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_sha256(void)
{
    char hex[65];
    sha256_hex("", 0, hex);
    CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha256_hex("abc", 3, hex);
    CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_hex(two, strlen(two), hex);
    CHECK_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    char big[1000];
    memset(big, 'a', sizeof(big));
    sha256_hex(big, sizeof(big), hex);
    CHECK_STR(hex, "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

static void test_strbuf(void)
{
    StrBuf sb = {0};
    for (int i = 0; i < 1000; i++)
        sb_printf(&sb, "%d,", i);
    CHECK(sb.len > 3000);
    CHECK(strncmp(sb.s, "0,1,2,", 6) == 0);
    char *s = sb_take(&sb);
    CHECK(sb.s == NULL && sb.len == 0);
    free(s);
    s = sb_take(&sb);
    CHECK_STR(s, "");
    free(s);
}

static void test_parse(void)
{
    long v;
    CHECK(parse_long("42", 0, 100, &v) == 0 && v == 42);
    CHECK(parse_long("42x", 0, 100, &v) != 0);
    CHECK(parse_long("", 0, 100, &v) != 0);
    CHECK(parse_long("101", 0, 100, &v) != 0);
    CHECK(parse_long("-1", 0, 100, &v) != 0);
    CHECK(parse_long("99999999999999999999999", 0, 100, &v) != 0);
    double d;
    CHECK(parse_double("0.02", &d) == 0 && d == 0.02);
    CHECK(parse_double("nan", &d) != 0);
    CHECK(parse_double("1e", &d) != 0);
}

static void test_paths(void)
{
    char *d = path_dirname("templates/attention/task.json");
    CHECK_STR(d, "templates/attention");
    char *j = path_join(d, "attention.cu");
    CHECK_STR(j, "templates/attention/attention.cu");
    free(j);
    j = path_join(d, "/abs/x.cu");
    CHECK_STR(j, "/abs/x.cu");
    free(j);
    free(d);
    d = path_dirname("task.json");
    CHECK_STR(d, ".");
    free(d);
    /* path_absolute (cli/cli.h): a missing relative path is joined to the cwd, an
     * existing one resolved, an absolute missing one kept as it is. */
    char cwd[4096];
    CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
    char *a = path_absolute("no/such/dir/task.json");
    char *want = xasprintf("%s/no/such/dir/task.json", cwd);
    CHECK_STR(a, want);
    free(a);
    free(want);
    a = path_absolute("/no/such/task.json");
    CHECK_STR(a, "/no/such/task.json");
    free(a);
    a = path_absolute(".");
    char *real = realpath(cwd, NULL);
    CHECK_STR(a, real);
    free(real);
    free(a);
}

static void test_err(void)
{
    EvoErr e;
    CHECK(err_set(&e, "cuInit: %s", "CUDA_ERROR_NO_DEVICE") == -1);
    err_prefix(&e, "worker");
    CHECK_STR(e.msg, "worker: cuInit: CUDA_ERROR_NO_DEVICE");
    CHECK(err_set(NULL, "ignored") == -1);
}

/* ---- files (issue 35) ---------------------------------------------------- */

static char *scratch(void)
{
    char tmpl[] = "/tmp/evo_test_util_XXXXXX";
    return xstrdup(mkdtemp(tmpl) ? tmpl : "/tmp");
}

static char *slurp(const char *path)
{
    char *t = NULL;
    EvoErr e;
    return file_read(path, &t, NULL, &e) == 0 ? t : xstrdup("(unreadable)");
}

/* Regular files only, bounded: a device or a FIFO is refused at once
 * (never read to the end, never waited on). */
static void test_file_read_bounds(void)
{
    char *d = scratch(), *t = NULL;
    EvoErr e;
    CHECK(file_read("/dev/zero", &t, NULL, &e) < 0);
    CHECK_CONTAINS(e.msg, "/dev/zero: not a regular file");
    char *fifo = xasprintf("%s/fifo", d);
    CHECK(mkfifo(fifo, 0600) == 0);
    double t0 = time_now_ms();
    CHECK(file_read(fifo, &t, NULL, &e) < 0);
    CHECK_CONTAINS(e.msg, "not a regular file");
    CHECK(time_now_ms() - t0 < 2000);
    CHECK(file_read(d, &t, NULL, &e) < 0);
    char *big = xasprintf("%s/big", d);
    FILE *f = fopen(big, "w");
    CHECK(f && ftruncate(fileno(f), (off_t)FILE_READ_MAX + 1) == 0);
    if (f)
        fclose(f);
    CHECK(file_read(big, &t, NULL, &e) < 0);
    CHECK_CONTAINS(e.msg, "too large");
    size_t len = 0;
    CHECK(file_read_max(big, (size_t)FILE_READ_MAX + 1, &t, &len, &e) == 0 && len == (size_t)FILE_READ_MAX + 1);
    free(t);
    CHECK(test_rmtree(d) == 0);
    free(big);
    free(fifo);
    free(d);
}

/* Nothing but a regular file is replaced; a symlink only with the force
 * flag (the link, never its target); a symlink planted at the old
 * temporary name (PATH.tmp.PID) is never followed; a failed write (the
 * file size limit standing in for a full disk) leaves the old file whole,
 * names the path asked for and leaves no temporary file. */
static void test_file_write_safety(void)
{
    char *d = scratch();
    EvoErr e;
    char *out = xasprintf("%s/out.txt", d), *target = xasprintf("%s/target", d), *lnk = xasprintf("%s/link", d);
    CHECK(file_write(out, "one", 3, &e) == 0);
    CHECK(file_write(out, "two", 3, &e) == 0);
    char *t = slurp(out);
    CHECK_STR(t, "two");
    free(t);
    /* without fsync (the compile cache): the same whole-file replacement */
    CHECK(file_write_flags(out, "three", 5, FILE_WRITE_NOSYNC, &e) == 0);
    t = slurp(out);
    CHECK_STR(t, "three");
    free(t);
    CHECK(file_write_flags(d, "x", 1, FILE_WRITE_NOSYNC, &e) < 0);
    CHECK_CONTAINS(e.msg, "a directory: not replacing it");
    CHECK(file_write(target, "OLD", 3, &e) == 0);
    CHECK(symlink(target, lnk) == 0);
    CHECK(file_write(lnk, "NEW", 3, &e) < 0);
    CHECK_CONTAINS(e.msg, "a symbolic link: not replacing it");
    CHECK(file_write_flags(lnk, "NEW", 3, FILE_WRITE_FORCE, &e) == 0);
    struct stat st;
    CHECK(lstat(lnk, &st) == 0 && S_ISREG(st.st_mode));
    t = slurp(target);
    CHECK_STR(t, "OLD");
    free(t);
    char *fifo = xasprintf("%s/fifo", d);
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK(file_write(fifo, "x", 1, &e) < 0);
    CHECK_CONTAINS(e.msg, "a FIFO: not replacing it");
    CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
    CHECK(file_write(d, "x", 1, &e) < 0);
    CHECK_CONTAINS(e.msg, "a directory");
    CHECK(file_write("/no/such/dir/x.html", "x", 1, &e) < 0);
    CHECK_CONTAINS(e.msg, "/no/such/dir/x.html: cannot create");
    CHECK(strstr(e.msg, ".tmp.") == NULL);
    /* symlinks where the old code put its temporary file */
    char *victim = xasprintf("%s/victim", d), *planted = xasprintf("%s.tmp.%ld", out, (long)getpid());
    CHECK(file_write(victim, "VICTIM", 6, &e) == 0);
    CHECK(symlink(victim, planted) == 0);
    CHECK(file_write(out, "three", 5, &e) == 0);
    t = slurp(victim);
    CHECK_STR(t, "VICTIM");
    free(t);
    unlink(planted);
    /* a write that fails: in a child under RLIMIT_FSIZE (SIGXFSZ ignored) */
    char big[65536];
    memset(big, 'b', sizeof(big));
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {8192, 8192};
        setrlimit(RLIMIT_FSIZE, &rl);
        EvoErr ce;
        int rc = file_write(out, big, sizeof(big), &ce);
        _exit(rc < 0 && strstr(ce.msg, "write failed") && strstr(ce.msg, "out.txt:") && !strstr(ce.msg, ".tmp.") ? 0 : 1);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    t = slurp(out);
    CHECK_STR(t, "three");
    free(t);
    char *cmd = xasprintf("ls '%s' | grep -c '\\.tmp\\.' >/dev/null", d);
    CHECK(system(cmd) != 0);   /* no temporary file left behind */
    free(cmd);
    CHECK(test_rmtree(d) == 0);
    free(victim);
    free(planted);
    free(fifo);
    free(out);
    free(target);
    free(lnk);
    free(d);
}

/* device_cores follows the affinity mask: a process on one CPU (taskset -c N)
 * gets one compile thread, not one per core of the host. */
static void test_cpu_cores(void)
{
    cpu_set_t all, one;
    CHECK(sched_getaffinity(0, sizeof(all), &all) == 0);
    int n = device_cores();
    CHECK(n >= 1 && n <= CPU_COUNT(&all));
    int first = 0;
    while (first < CPU_SETSIZE && !CPU_ISSET(first, &all))
        first++;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    CHECK(sched_setaffinity(0, sizeof(one), &one) == 0);
    CHECK(device_cores() == 1);
    CHECK(sched_setaffinity(0, sizeof(all), &all) == 0);
    CHECK(device_cores() == n);
}

int main(void)
{
    RUN(test_sha256);
    RUN(test_strbuf);
    RUN(test_parse);
    RUN(test_paths);
    RUN(test_err);
    RUN(test_file_read_bounds);
    RUN(test_file_write_safety);
    RUN(test_cpu_cores);
    return test_report();
}
