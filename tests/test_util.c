/* Unit tests for util: strings, SHA-256, strict number parsing, paths. */
#include "testhelp.h"
#include "util.h"

#include <stdlib.h>
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
    /* path_absolute: a missing relative path is joined to the cwd, an
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

int main(void)
{
    RUN(test_sha256);
    RUN(test_strbuf);
    RUN(test_parse);
    RUN(test_paths);
    RUN(test_err);
    return test_report();
}
