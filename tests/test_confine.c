/*
 * Unit tests for confine (issue 35, items 2 and 3): the #include scan
 * against every way a directive can be spelled or hidden, the compile
 * option allow-list, paths kept inside a spec's directory, the NVRTC log
 * filter, and NVRTC itself: a kernel that includes a host file is refused
 * before NVRTC runs, and a relative include never reaches the current
 * directory, so no host file's text reaches a compile log.
 */
#include "testhelp.h"
#include "testdata.h"
#include "config.h"
#include "task/confine.h"
#include "compile/nvrtc.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static int scan(const char *src)
{
    EvoErr err = {{0}};
    return confine_scan_includes(src, "k.cu", &err);
}

static void test_scan_allows(void)
{
    const char *ok[] = {
        "#include <cuda_fp16.h>\n__global__ void k() {}\n",
        "#include \"cuda_fp16.h\"\n#include <cuda/std/cstdint>\n",
        "  #  include <mma.h>   // tensor cores\n",
        "// #include \"/etc/passwd\" is only a comment\n",
        "int x; /* #include \"/etc/passwd\" */\n",
        "const char *s = \"#include </etc/passwd>\";\n",
        "#define HDR \"x\"\n#ifdef __has_include\n#endif\n",
        "#pragma once\n#line 1 \"/etc/passwd\"\n",
        "",
    };
    for (size_t i = 0; i < EVO_ARRAY_LEN(ok); i++)
        CHECK_MSG(scan(ok[i]) == 0, "case %zu refused: %s", i, ok[i]);
}

static void test_scan_refuses(void)
{
    const char *bad[] = {
        "#include \"/etc/passwd\"\n",
        "#include </proc/self/environ>\n",
        "#include \"/dev/zero\"\n",
        "#include \"../../../../etc/passwd\"\n",
        "#include <cuda/../../../../../etc/passwd>\n",
        "#include \"sub\\\\..\\\\x\"\n",
        "#define F \"/etc/passwd\"\n#include F\n",              /* computed */
        "#include\n",
        "#include \"/etc/passwd\n",                            /* unclosed */
        "%:include \"/etc/passwd\"\n",                         /* digraph */
        "#inc\\\nlude \"/etc/passwd\"\n",                      /* spliced name */
        "#include \"/etc/\\\npasswd\"\n",                      /* spliced operand */
        "#inc\\ \nlude \"/etc/passwd\"\n",                     /* splice with a blank (lax) */
        "# /* c */ include /* d */ \"/etc/passwd\"\n",
        "/* a comment\n   over lines */ #include \"/etc/passwd\"\n",
        "int x;\r#include \"/etc/passwd\"\r",                  /* CR newlines */
        "\xEF\xBB\xBF#include \"/etc/passwd\"\n",               /* after a BOM */
        "#include_next <stdio.h>\n",
        "#import \"x.h\"\n",
        "#embed \"/etc/passwd\"\n",
        "#\\u0069nclude \"/etc/passwd\"\n",
        "#pragma include_alias(\"a.h\", \"/etc/passwd\")\n",
        "_Pragma(\"include_alias(\\\"a\\\", \\\"b\\\")\")\n",
        "R\"x(\n#include \"/etc/passwd\"\n)x\";\n",             /* inside a raw string: refused anyway */
    };
    for (size_t i = 0; i < EVO_ARRAY_LEN(bad); i++)
        CHECK_MSG(scan(bad[i]) < 0, "case %zu allowed: %s", i, bad[i]);
    EvoErr err = {{0}};
    CHECK(confine_scan_includes("int a;\n\n#include \"/etc/passwd\"\n", "kern.cu", &err) < 0);
    CHECK_CONTAINS(err.msg, "kern.cu line 3: '#include \"/etc/passwd\"': refused: an absolute path");
    CHECK(confine_scan_includes("#define E x\n#include E\n", "kern.cu", &err) < 0);
    CHECK_CONTAINS(err.msg, "computed #include");
    CHECK(confine_scan_includes("x\\\ny\n#include \"../a\"\n", "kern.cu", &err) < 0);
    CHECK_CONTAINS(err.msg, "line 3");   /* line numbers survive a splice */
}

static void test_options(void)
{
    const char *ok[] = {"-std=c++17", "--std=c++20", "-DBLOCK=64", "-DX", "--define-macro=Y=1.5", "-UFOO",
                        "--use_fast_math", "-maxrregcount=128", "--maxrregcount=64", "--extra-device-vectorization",
                        "--fmad=false", "--ftz=true", "--prec-div=true", "--prec-sqrt=false", "-lineinfo",
                        "--restrict", "-default-device", "-w", "--diag-suppress=177,550", "--dopt=on",
                        "--ptxas-options=-O3", "--ptxas-options=-v", "-DNEG=-1"};
    const char *bad[] = {"--create-pch=/tmp/x.pch", "--use-pch", "--pch-dir=/tmp", "--time=/tmp/t.csv",
                         "--fdevice-time-trace=/tmp/t.json", "-I/etc", "--include-path=/etc", "--pre-include=/etc/passwd",
                         "-include", "/etc/passwd", "-std=c++14", "-std=c++11", "-std=c++03", "--gpu-architecture=sm_80",
                         "-arch=sm_80", "-DX=$(id)", "-D X", "-DX=a b", "-DX=\"s\"", "-D", "-maxrregcount=0",
                         "-maxrregcount=999", "--fmad=maybe", "--ptxas-options=--output-file=/tmp/x",
                         "-Xptxas=-O3 -v", "--diag-suppress=1;2", "", "-G --x", "-DX=1\n#include \"/etc/passwd\""};
    EvoErr err = {{0}};
    for (size_t i = 0; i < EVO_ARRAY_LEN(ok); i++)
        CHECK_MSG(confine_check_option(ok[i], &err) == 0, "%s refused: %s", ok[i], err.msg);
    for (size_t i = 0; i < EVO_ARRAY_LEN(bad); i++)
        CHECK_MSG(confine_check_option(bad[i], &err) < 0, "'%s' allowed", bad[i]);
    CHECK(confine_check_option("--create-pch=/tmp/x.pch", &err) < 0);
    CHECK_CONTAINS(err.msg, "not an allowed NVRTC option (allowed: -DNAME[=VALUE]");
}

/* A scratch tree: d/spec/ (the spec's directory, with t.cu and a link to
 * /etc/passwd), d/other/o.cu. */
static char *make_tree(void)
{
    char tmpl[] = "/tmp/evo_confine_XXXXXX";
    char *d = mkdtemp(tmpl);
    if (!d)
        return NULL;
    char *cmd = xasprintf("mkdir -p %s/spec/sub %s/other && echo x > %s/spec/t.cu && echo y > %s/other/o.cu && "
                          "ln -s /etc/passwd %s/spec/link.cu && ln -s ../other/o.cu %s/spec/out.cu && "
                          "echo z > %s/spec/sub/s.cu", d, d, d, d, d, d, d);
    int rc = system(cmd);
    free(cmd);
    return rc == 0 ? xstrdup(d) : NULL;
}

static void test_resolve(void)
{
    char *d = make_tree();
    CHECK(d != NULL);
    if (!d)
        return;
    char *spec = xasprintf("%s/spec", d), *other = xasprintf("%s/other", d);
    EvoErr err = {{0}};
    char *r = confine_resolve(spec, NULL, "t.cu", &err);
    CHECK_MSG(r && strstr(r, "/spec/t.cu"), "%s", err.msg);
    free(r);
    r = confine_resolve(spec, NULL, "sub/s.cu", &err);
    CHECK(r != NULL);
    free(r);
    const char *refused[] = {"../other/o.cu", "/etc/passwd", "link.cu", "out.cu", "/proc/self/environ",
                             "../../../../../../../etc/passwd", "/dev/zero", "sub/../../other/o.cu"};
    for (size_t i = 0; i < EVO_ARRAY_LEN(refused); i++) {
        r = confine_resolve(spec, NULL, refused[i], &err);
        CHECK_MSG(r == NULL, "%s resolved to %s", refused[i], r);
        free(r);
    }
    r = confine_resolve(spec, NULL, "/etc/passwd", &err);
    CHECK_CONTAINS(err.msg, "outside the task's directory");
    CHECK_CONTAINS(err.msg, "--allow-path");
    r = confine_resolve(spec, NULL, "no_such.cu", &err);
    CHECK(r == NULL);
    CHECK_CONTAINS(err.msg, "cannot read 'no_such.cu'");
    /* --allow-path: another directory, never /proc or /dev */
    CHECK(confine_allow_dir(other, &err) == 0);
    r = confine_resolve(spec, NULL, "../other/o.cu", &err);
    CHECK_MSG(r != NULL, "%s", err.msg);
    free(r);
    r = confine_resolve(spec, NULL, "out.cu", &err);
    CHECK(r != NULL);
    free(r);
    CHECK(confine_allow_dir("/", &err) == 0);
    r = confine_resolve(spec, NULL, "/proc/self/environ", &err);
    CHECK(r == NULL);
    CHECK_CONTAINS(err.msg, "evoeng never reads there");
    confine_reset();
    CHECK(confine_allow_dir("/no/such/dir", &err) < 0);
    CHECK(test_rmtree(d) == 0);
    free(spec);
    free(other);
    free(d);
}

static void test_filter_log(void)
{
    const char *log =
        "/etc/passwd(1): error: identifier \"root\" is undefined\n"
        "  root:x:0:0:root:/root:/bin/bash\n"
        "  ^\n"
        "\n"
        "k.cu(3): error: expected a \";\"\n"
        "  int x y;\n"
        "        ^\n"
        "\n"
        EVO_CUDA_INCLUDE "/cuda_fp16.hpp(10): warning: something\n"
        "  __half h;\n"
        "\n"
        "3 errors detected in the compilation of \"k.cu\".\n";
    char *f = confine_filter_log(log, "k.cu");
    CHECK(strstr(f, "root:x") == NULL && strstr(f, "\"root\"") == NULL);
    CHECK_CONTAINS(f, "/etc/passwd: a diagnostic about a file outside the task (withheld by evoeng)");
    CHECK_CONTAINS(f, "k.cu(3): error: expected a \";\"\n  int x y;\n");
    CHECK_CONTAINS(f, "cuda_fp16.hpp(10): warning: something\n  __half h;\n");
    CHECK_CONTAINS(f, "3 errors detected");
    free(f);
}

/* NVRTC end to end (no GPU needed): nothing of a host file reaches a log. */
static void test_nvrtc(void)
{
    setenv("EVO_CONFINE_MARKER", "evoeng-secret-7f3a9", 1);
    const char *src = "#include \"/proc/self/environ\"\nextern \"C\" __global__ void k() {}\n";
    CompileRequest req = {.source = src, .name = "candidate.cu", .arch = "sm_90"};
    CompileResult res;
    EvoErr err = {{0}};
    int before = nvrtc_compile_count();
    CHECK(nvrtc_compile(&req, &res, &err) == 0);
    CHECK(!res.ok);
    CHECK(nvrtc_compile_count() == before);          /* refused before NVRTC ran */
    CHECK_CONTAINS(res.error, "refused: an absolute path");
    CHECK(strstr(res.log, "evoeng-secret") == NULL);
    nvrtc_result_free(&res);

    /* a relative include of a file in the current directory is not found */
    FILE *f = fopen("evo_confine_secret.h", "w");
    CHECK(f != NULL);
    if (f) {
        fputs("evoeng_secret_line_4242 = 1;\n", f);
        fclose(f);
    }
    req.source = "#include \"evo_confine_secret.h\"\nextern \"C\" __global__ void k() {}\n";
    CHECK(nvrtc_compile(&req, &res, &err) == 0);
    CHECK(!res.ok);
    CHECK_CONTAINS(res.log, "cannot open source file \"evo_confine_secret.h\"");
    CHECK_CONTAINS(res.log, "candidate.cu(1)");       /* the program's plain name */
    CHECK(strstr(res.log, "evoeng_secret_line") == NULL);
    CHECK(strstr(res.log, "nowhere") == NULL);
    nvrtc_result_free(&res);
    unlink("evo_confine_secret.h");

    /* CUDA's own headers still find their neighbours */
    req.source = "#include <mma.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
                 "extern \"C\" __global__ void k(__half *x) { x[0] = __float2half(1.f); }\n";
    CHECK(nvrtc_compile(&req, &res, &err) == 0);
    CHECK_MSG(res.ok, "%s", res.log);
    nvrtc_result_free(&res);

    /* an option off the list never reaches NVRTC */
    const char *opts[] = {"--create-pch=/tmp/evo_confine.pch"};
    req.options = opts;
    req.noptions = 1;
    CHECK(nvrtc_compile(&req, &res, &err) < 0);
    CHECK_CONTAINS(err.msg, "not an allowed NVRTC option");
    struct stat st;
    CHECK(stat("/tmp/evo_confine.pch", &st) != 0);
    nvrtc_result_free(&res);
}

int main(void)
{
    nvrtc_set_cache_dir(NULL);
    RUN(test_scan_allows);
    RUN(test_scan_refuses);
    RUN(test_options);
    RUN(test_resolve);
    RUN(test_filter_log);
    RUN(test_nvrtc);
    return test_report();
}
