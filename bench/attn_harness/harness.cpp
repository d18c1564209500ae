/*
 * harness.cpp -- standalone validation and timing harness for the evoeng
 * attention template (templates/attention).  Not part of evoeng: a tool
 * for the device machine, built on the host with nvcc/g++ against NVRTC and
 * the driver API (see README.md).
 *
 * Usage: harness TEMPLATE_DIR CONFIGS SHAPES [threads] [timing-configs]
 *   CONFIGS: one configuration per line, "NAME=VALUE ..." (gen.py sample)
 *   SHAPES:  "B H S D CAUSAL" per line; the first line is the benchmark
 *            shape, timed with CAUSAL 0 and 1.
 * For every configuration and every (D, CAUSAL) that the shapes need it
 * compiles attention.cu with NVRTC (parallel, one thread each) for the
 * device's sm_XY, checks every shape against reference.cu (whose output is
 * itself checked against a double-precision CPU computation on a subset of
 * rows), with NaN-poisoned outputs and scratch, then times the benchmark
 * shape: CUDA-graph replay of NREP launch plans, median of 21 samples.
 * Prints one line per configuration and the fastest ones at the end.
 */
#include <cuda.h>
#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#define CK(x)                                                                      \
    do {                                                                           \
        CUresult r_ = (x);                                                         \
        if (r_ != CUDA_SUCCESS) {                                                  \
            const char *n_ = "?";                                                  \
            cuGetErrorName(r_, &n_);                                               \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, n_);         \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

typedef std::vector<std::pair<std::string, int>> Cfg;

struct Shape { int B, H, S, D, causal; };

struct Build {
    std::string cubin, log;
    bool ok = false;
    int spill = -1;
};

static std::string slurp(const std::string &p)
{
    std::ifstream f(p);
    if (!f) { fprintf(stderr, "cannot read %s\n", p.c_str()); exit(1); }
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

static int cfg_get(const Cfg &c, const char *k, int def)
{
    for (auto &kv : c) if (kv.first == k) return kv.second;
    return def;
}

static std::string cfg_str(const Cfg &c)
{
    static const std::map<std::string, std::string> abbr = {
        {"BLOCK_M", "m"}, {"BLOCK_N", "n"}, {"WARPS", "w"}, {"STAGES", "st"}, {"SWIZZLE", "sw"},
        {"EXP2", "e2"}, {"CAUSAL_SKIP", "cs"}, {"Q_IN_REGS", "qr"}, {"SPLITS", "sp"},
        {"MIN_BLOCKS", "mb"}, {"O_STAGE", "os"}, {"CLUSTER", "cl"}, {"WSCALE", "ws"}, {"OVERLAP", "ov"}};
    std::string s;
    for (auto &kv : c) {
        auto it = abbr.find(kv.first);
        s += (it != abbr.end() ? it->second : kv.first) + std::to_string(kv.second) + " ";
    }
    if (!s.empty()) s.pop_back();
    return s;
}

static Build compile(const std::string &src, const std::string &name, const Cfg &cfg, int D,
                     int causal, const std::string &arch)
{
    Build b;
    std::string full;
    for (auto &kv : cfg) full += "#define " + kv.first + " " + std::to_string(kv.second) + "\n";
    full += "#define D " + std::to_string(D) + "\n#define CAUSAL " + std::to_string(causal) + "\n";
    full += src;
    nvrtcProgram prog;
    if (nvrtcCreateProgram(&prog, full.c_str(), name.c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS) {
        b.log = "nvrtcCreateProgram failed";
        return b;
    }
    std::string a = "-arch=" + arch;
    const char *opts[] = {"-std=c++17", a.c_str(), "--ptxas-options=-v"};
    nvrtcResult r = nvrtcCompileProgram(prog, 3, opts);
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    b.log.resize(n);
    if (n) nvrtcGetProgramLog(prog, &b.log[0]);
    if (r == NVRTC_SUCCESS) {
        nvrtcGetCUBINSize(prog, &n);
        b.cubin.resize(n);
        nvrtcGetCUBIN(prog, &b.cubin[0]);
        b.ok = true;
        /* ptxas -v: "N bytes spill stores" per entry; take the max. */
        size_t pos = 0;
        b.spill = 0;
        while ((pos = b.log.find("bytes spill stores", pos)) != std::string::npos) {
            size_t sp2 = b.log.rfind(' ', pos - 2);
            int v = atoi(b.log.c_str() + sp2 + 1);
            b.spill = std::max(b.spill, v);
            pos += 5;
        }
    }
    nvrtcDestroyProgram(&prog);
    return b;
}

static uint16_t f2h(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    int32_t e = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t m = x & 0x7fffff;
    if (e >= 31) return (uint16_t)(sign | 0x7c00);
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign;
        m |= 0x800000;
        int shift = 14 - e;
        uint32_t hm = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (hm & 1))) hm++;
        return (uint16_t)(sign | hm);
    }
    uint32_t hm = m >> 13, rem = m & 0x1fff;
    uint32_t h = sign | ((uint32_t)e << 10) | hm;
    if (rem > 0x1000 || (rem == 0x1000 && (hm & 1))) h++;
    return (uint16_t)h;
}

static float h2f(uint16_t h)
{
    uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, x;
    if (e == 0) {
        if (m == 0) x = sign;
        else {
            e = 127 - 15 + 1;
            while (!(m & 0x400)) { m <<= 1; e--; }
            x = sign | (e << 23) | ((m & 0x3ff) << 13);
        }
    } else if (e == 31) x = sign | 0x7f800000u | (m << 13);
    else x = sign | ((e + 127 - 15) << 23) | (m << 13);
    float f;
    memcpy(&f, &x, 4);
    return f;
}

struct ShapeData {
    Shape sh;
    size_t n;
    CUdeviceptr q, k, v, oref;
    std::vector<uint16_t> href;
};

struct Plan {
    CUfunction fwd, comb;
    int splits, bm, threads, smem, cluster;
};

static void launch_plan(const Plan &p, const Shape &s, CUdeviceptr q, CUdeviceptr k, CUdeviceptr v,
                        CUdeviceptr o, CUdeviceptr opart, CUdeviceptr ml, CUstream st)
{
    int S = s.S;
    float scale = 1.0f / sqrtf((float)s.D);
    void *a1[] = {&q, &k, &v, &o, &opart, &ml, &S, &scale};
    CK(cuLaunchKernel(p.fwd, (S + p.bm - 1) / p.bm, s.B * s.H, p.splits, p.threads, 1, 1, p.smem, st,
                      a1, nullptr));
    if (p.splits > 1 && !p.cluster) {
        int rows = s.B * s.H * S;
        void *a2[] = {&opart, &ml, &o, &rows};
        long long total = (long long)rows * s.D;
        CK(cuLaunchKernel(p.comb, (unsigned)((total + 511) / 512), 1, 1, 128, 1, 1, 0, st, a2, nullptr));
    }
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s TEMPLATE_DIR CONFIGS SHAPES [threads]\n", argv[0]);
        return 2;
    }
    std::string tdir = argv[1];
    int nthreads = argc > 4 ? atoi(argv[4]) : (int)std::thread::hardware_concurrency();
    if (nthreads < 1) nthreads = 1;
    std::string src = slurp(tdir + "/attention.cu"), rsrc = slurp(tdir + "/reference.cu");

    std::vector<Cfg> cfgs;
    {
        std::istringstream in(slurp(argv[2]));
        std::string ln;
        while (std::getline(in, ln)) {
            std::istringstream ls(ln);
            std::string tok;
            Cfg c;
            while (ls >> tok) {
                size_t eq = tok.find('=');
                if (eq == std::string::npos) continue;
                c.push_back({tok.substr(0, eq), atoi(tok.c_str() + eq + 1)});
            }
            if (!c.empty()) cfgs.push_back(c);
        }
    }
    std::vector<Shape> shapes;
    {
        std::istringstream in(slurp(argv[3]));
        Shape s;
        while (in >> s.B >> s.H >> s.S >> s.D >> s.causal) shapes.push_back(s);
    }
    if (shapes.empty()) { fprintf(stderr, "no shapes\n"); return 2; }
    Shape bench0 = shapes[0], bench1 = shapes[0];
    bench0.causal = 0;
    bench1.causal = 1;

    if (argc > 5 && strcmp(argv[5], "compile-only") == 0) {
        /* No GPU needed: NVRTC for sm_90, report registers-free spill info. */
        std::vector<Build> bl(cfgs.size() * 2);
        std::atomic<size_t> next(0);
        auto work = [&]() {
            for (size_t i; (i = next++) < bl.size();)
                bl[i] = compile(src, "attention.cu", cfgs[i / 2], i % 2 ? 128 : 64, 1, "sm_90");
        };
        std::vector<std::thread> th;
        for (int t = 0; t < nthreads; ++t) th.emplace_back(work);
        for (auto &t : th) t.join();
        int bad = 0;
        for (size_t i = 0; i < bl.size(); ++i) {
            if (!bl[i].ok || bl[i].spill != 0) bad++;
            if (!bl[i].ok || bl[i].spill != 0 || i % 2 == 1)
                printf("%s D%d spill %d  %s\n", bl[i].ok ? "ok  " : "FAIL", i % 2 ? 128 : 64, bl[i].spill,
                       cfg_str(cfgs[i / 2]).c_str());
            if (!bl[i].ok) printf("%s\n", bl[i].log.c_str());
        }
        printf("compile-only: %zu builds, %d failed or spilled\n", bl.size(), bad);
        return bad ? 1 : 0;
    }
    CK(cuInit(0));
    CUdevice dev;
    CK(cuDeviceGet(&dev, 0));
    char dname[256];
    CK(cuDeviceGetName(dname, sizeof dname, dev));
    int ccmaj, ccmin, optin, nsm;
    CK(cuDeviceGetAttribute(&ccmaj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CK(cuDeviceGetAttribute(&ccmin, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    CK(cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev));
    CK(cuDeviceGetAttribute(&nsm, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    CUcontext ctx;
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    std::string arch = "sm_" + std::to_string(ccmaj) + std::to_string(ccmin);
    printf("device %s (%s, %d SMs, smem optin %d), %zu configs, %zu shapes, %d compile threads\n",
           dname, arch.c_str(), nsm, optin, cfgs.size(), shapes.size(), nthreads);

    /* Variants (D, causal) needed: shapes + both benchmark variants. */
    std::vector<std::pair<int, int>> vars;
    auto addvar = [&](int d, int c) {
        for (auto &x : vars) if (x.first == d && x.second == c) return;
        vars.push_back({d, c});
    };
    for (auto &s : shapes) addvar(s.D, s.causal);
    addvar(bench0.D, 0);
    addvar(bench0.D, 1);

    /* Compile everything in parallel. */
    std::vector<Build> builds(cfgs.size() * vars.size());
    std::vector<Build> rbuilds(vars.size());
    {
        std::atomic<size_t> next(0);
        size_t total = builds.size() + rbuilds.size();
        auto work = [&]() {
            for (;;) {
                size_t i = next++;
                if (i >= total) return;
                if (i < rbuilds.size())
                    rbuilds[i] = compile(rsrc, "reference.cu", Cfg(), vars[i].first, vars[i].second, arch);
                else {
                    size_t j = i - rbuilds.size();
                    builds[j] = compile(src, "attention.cu", cfgs[j / vars.size()], vars[j % vars.size()].first,
                                        vars[j % vars.size()].second, arch);
                }
            }
        };
        std::vector<std::thread> th;
        for (int t = 0; t < nthreads; ++t) th.emplace_back(work);
        for (auto &t : th) t.join();
    }
    for (size_t i = 0; i < rbuilds.size(); ++i)
        if (!rbuilds[i].ok) { fprintf(stderr, "reference compile failed:\n%s\n", rbuilds[i].log.c_str()); return 1; }
    printf("compiled %zu kernels\n", builds.size() + rbuilds.size());

    /* Data and reference outputs per shape (bench variants included). */
    std::vector<Shape> all = shapes;
    all.push_back(bench0);
    all.push_back(bench1);
    size_t maxn = 0;
    for (auto &s : all) maxn = std::max(maxn, (size_t)s.B * s.H * s.S * s.D);
    CUdeviceptr dO, dOpart, dML;
    CK(cuMemAlloc(&dO, maxn * 2));
    CK(cuMemAlloc(&dOpart, maxn * 4 * 8));
    CK(cuMemAlloc(&dML, maxn / 16 * 4 * 2 * 8 + 1024));
    std::vector<ShapeData> sd;
    std::mt19937 rng(12345);
    std::normal_distribution<float> nd(0.f, 1.f);
    double ref_worst = 0;
    for (size_t si = 0; si < all.size(); ++si) {
        ShapeData d;
        d.sh = all[si];
        const Shape &s = d.sh;
        d.n = (size_t)s.B * s.H * s.S * s.D;
        std::vector<uint16_t> hq(d.n), hk(d.n), hv(d.n);
        for (auto *vec : {&hq, &hk, &hv})
            for (auto &x : *vec) x = f2h(nd(rng));
        CK(cuMemAlloc(&d.q, d.n * 2));
        CK(cuMemAlloc(&d.k, d.n * 2));
        CK(cuMemAlloc(&d.v, d.n * 2));
        CK(cuMemAlloc(&d.oref, d.n * 2));
        CK(cuMemcpyHtoD(d.q, hq.data(), d.n * 2));
        CK(cuMemcpyHtoD(d.k, hk.data(), d.n * 2));
        CK(cuMemcpyHtoD(d.v, hv.data(), d.n * 2));
        CK(cuMemsetD16(d.oref, 0xffff, d.n));
        size_t vi = 0;
        while (!(vars[vi].first == s.D && vars[vi].second == s.causal)) vi++;
        CUmodule mod;
        CUfunction f;
        CK(cuModuleLoadData(&mod, rbuilds[vi].cubin.data()));
        CK(cuModuleGetFunction(&f, mod, "attn_ref"));
        int S = s.S;
        float scale = 1.0f / sqrtf((float)s.D);
        void *args[] = {&d.q, &d.k, &d.v, &d.oref, &S, &scale};
        if (S * 4 > 48 * 1024)
            CK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, S * 4));
        CK(cuLaunchKernel(f, S, s.B * s.H, 1, 128, 1, 1, S * 4, 0, args, nullptr));
        CK(cuCtxSynchronize());
        d.href.resize(d.n);
        CK(cuMemcpyDtoH(d.href.data(), d.oref, d.n * 2));
        /* CPU double check: first and last (b,h), up to 64 rows each. */
        double worst = 0;
        for (int bh : {0, s.B * s.H - 1}) {
            size_t base = (size_t)bh * s.S * s.D;
            for (int i = 0; i < s.S; i += std::max(1, s.S / 64)) {
                int n = s.causal ? i + 1 : s.S;
                std::vector<double> p(n);
                double mx = -1e300, l = 0;
                for (int j = 0; j < n; ++j) {
                    double acc = 0;
                    for (int dd = 0; dd < s.D; ++dd)
                        acc += (double)h2f(hq[base + (size_t)i * s.D + dd]) * h2f(hk[base + (size_t)j * s.D + dd]);
                    p[j] = acc * scale;
                    mx = std::max(mx, p[j]);
                }
                for (int j = 0; j < n; ++j) { p[j] = exp(p[j] - mx); l += p[j]; }
                for (int dd = 0; dd < s.D; ++dd) {
                    double o = 0;
                    for (int j = 0; j < n; ++j) o += p[j] * h2f(hv[base + (size_t)j * s.D + dd]);
                    o /= l;
                    double got = h2f(d.href[base + (size_t)i * s.D + dd]);
                    double e = std::isnan(got) ? 1e9 : fabs(got - o) / (1e-2 + 1e-2 * fabs(o));
                    worst = std::max(worst, e);
                }
            }
        }
        ref_worst = std::max(ref_worst, worst);
        printf("shape B%d H%d S%d D%d C%d: reference vs CPU worst err/tol %.3f\n", s.B, s.H, s.S, s.D,
               s.causal, worst);
        sd.push_back(d);
    }
    if (ref_worst > 1.0) printf("WARNING: reference disagrees with the CPU\n");

    CUstream st;
    CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    CUevent e0, e1;
    CK(cuEventCreate(&e0, 0));
    CK(cuEventCreate(&e1, 0));

    struct Row { size_t ci; double t0, t1; };
    std::vector<Row> rows;
    int nfail = 0, nspill = 0, ncompile = 0;
    const int NREP = 50, NSAMP = 21;
    printf("%-4s %-66s %4s %5s %6s %8s %8s %8s %7s\n", "id", "config", "regs", "spill", "smem", "err/tol",
           "us_nc", "us_c", "TF_nc");
    for (size_t ci = 0; ci < cfgs.size(); ++ci) {
        const Cfg &c = cfgs[ci];
        Plan p;
        p.splits = cfg_get(c, "SPLITS", 1);
        p.bm = cfg_get(c, "BLOCK_M", 64);
        p.threads = cfg_get(c, "WARPS", 4) * 32;
        p.cluster = cfg_get(c, "CLUSTER", 0);
        int bn = cfg_get(c, "BLOCK_N", 64), stg = cfg_get(c, "STAGES", 2), sw = cfg_get(c, "SWIZZLE", 1);
        std::map<std::pair<int, int>, std::pair<CUmodule, Plan>> mods;
        bool bad = false;
        int regs = 0, spill = 0, smem0 = 0;
        std::string why;
        for (size_t vi = 0; vi < vars.size(); ++vi) {
            Build &b = builds[ci * vars.size() + vi];
            if (!b.ok) { bad = true; why = "compile: " + b.log.substr(0, 600); ncompile++; break; }
            spill = std::max(spill, b.spill);
            CUmodule m;
            CK(cuModuleLoadData(&m, b.cubin.data()));
            Plan q = p;
            CK(cuModuleGetFunction(&q.fwd, m, "attn_fwd"));
            CK(cuModuleGetFunction(&q.comb, m, "attn_combine"));
            if (cfg_get(c, "WSCALE", 0) && vars[vi].first > 64)
                q.threads = p.threads * vars[vi].first / 64;
            q.smem = (p.bm + 2 * stg * bn) * (vars[vi].first + (sw ? 0 : 8)) * 2;
            if (p.cluster && p.splits > 1)
                q.smem = std::max(q.smem, p.bm * ((vars[vi].first + 8) * 4 + 8));
            if (vi == 0) smem0 = q.smem;
            if (q.smem > 48 * 1024)
                CK(cuFuncSetAttribute(q.fwd, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, q.smem));
            int r;
            CK(cuFuncGetAttribute(&r, CU_FUNC_ATTRIBUTE_NUM_REGS, q.fwd));
            regs = std::max(regs, r);
            mods[vars[vi]] = {m, q};
        }
        double worst = 0;
        if (!bad) {
            for (auto &d : sd) {
                const Shape &s = d.sh;
                Plan &q = mods[{s.D, s.causal}].second;
                CK(cuMemsetD16Async(dO, 0xffff, d.n, st));
                CK(cuMemsetD32Async(dOpart, 0x7fc00000, maxn * 8, st));
                CK(cuMemsetD32Async(dML, 0x7fc00000, maxn / 16 * 2 * 8, st));
                launch_plan(q, s, d.q, d.k, d.v, dO, dOpart, dML, st);
                CUresult r = cuStreamSynchronize(st);
                if (r != CUDA_SUCCESS) {
                    const char *n = "?";
                    cuGetErrorName(r, &n);
                    printf("FATAL launch error %s for %s\n", n, cfg_str(c).c_str());
                    return 1;
                }
                std::vector<uint16_t> ho(d.n);
                CK(cuMemcpyDtoH(ho.data(), dO, d.n * 2));
                double w = 0;
                size_t where = 0;
                for (size_t i = 0; i < d.n; ++i) {
                    float a = h2f(ho[i]), b = h2f(d.href[i]);
                    double e = (std::isnan(a) || std::isinf(a)) ? 1e9 : fabs(a - b) / (1e-2 + 1e-2 * fabs(b));
                    if (e > w) { w = e; where = i; }
                }
                if (w > 1.0 && why.empty()) {
                    char buf[200];
                    size_t row = where / s.D;
                    snprintf(buf, sizeof buf, "shape B%d H%d S%d D%d C%d: row %zu (bh %zu i %zu) d %zu err/tol %.3g",
                             s.B, s.H, s.S, s.D, s.causal, row, row / s.S, row % s.S, where % s.D, w);
                    why = buf;
                }
                worst = std::max(worst, w);
            }
            if (worst > 1.0) bad = true;
        }
        double tm[2] = {0, 0};
        if (!bad) {
            for (int k = 0; k < 2; ++k) {
                const ShapeData &d = sd[sd.size() - 2 + k];
                Plan &q = mods[{d.sh.D, d.sh.causal}].second;
                CUgraph gr;
                CUgraphExec ge;
                for (int w = 0; w < 3; ++w) launch_plan(q, d.sh, d.q, d.k, d.v, dO, dOpart, dML, st);
                CK(cuStreamSynchronize(st));
                CK(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL));
                for (int i = 0; i < NREP; ++i) launch_plan(q, d.sh, d.q, d.k, d.v, dO, dOpart, dML, st);
                CK(cuStreamEndCapture(st, &gr));
                CK(cuGraphInstantiate(&ge, gr, 0));
                for (int w = 0; w < 3; ++w) CK(cuGraphLaunch(ge, st));
                std::vector<float> ts;
                for (int i = 0; i < NSAMP; ++i) {
                    CK(cuEventRecord(e0, st));
                    CK(cuGraphLaunch(ge, st));
                    CK(cuEventRecord(e1, st));
                    CK(cuEventSynchronize(e1));
                    float ms;
                    CK(cuEventElapsedTime(&ms, e0, e1));
                    ts.push_back(ms * 1000.f / NREP);
                }
                std::sort(ts.begin(), ts.end());
                tm[k] = ts[ts.size() / 2];
                CK(cuGraphExecDestroy(ge));
                CK(cuGraphDestroy(gr));
            }
            rows.push_back({ci, tm[0], tm[1]});
        }
        if (spill > 0) nspill++;
        if (bad && why.compare(0, 8, "compile:") != 0) nfail++;
        double fl = 4.0 * bench0.B * bench0.H * (double)bench0.S * bench0.S * bench0.D;
        printf("%-4zu %-66s %4d %5d %6d %8.3f %8.2f %8.2f %7.1f%s%s\n", ci, cfg_str(c).c_str(), regs, spill, smem0,
               worst, tm[0], tm[1], bad ? 0.0 : fl / tm[0] * 1e-6, bad ? "  FAIL " : "", why.c_str());
        fflush(stdout);
        for (auto &kv : mods) CK(cuModuleUnload(kv.second.first));
    }
    printf("\nSUMMARY: %zu configs, %zu passed, %d wrong, %d compile failures, %d with spills\n", cfgs.size(),
           rows.size(), nfail, ncompile, nspill);
    for (int k = 0; k < 2; ++k) {
        std::sort(rows.begin(), rows.end(), [k](const Row &a, const Row &b) {
            return (k ? a.t1 : a.t0) < (k ? b.t1 : b.t0);
        });
        double fl = 4.0 * bench0.B * bench0.H * (double)bench0.S * bench0.S * bench0.D / (k ? 2 : 1);
        printf("fastest, B%d H%d S%d D%d causal %d:\n", bench0.B, bench0.H, bench0.S, bench0.D, k);
        for (size_t i = 0; i < rows.size() && i < 12; ++i) {
            double t = k ? rows[i].t1 : rows[i].t0;
            printf("  %7.2f us %6.1f TF/s  [%zu] %s\n", t, fl / t * 1e-6, rows[i].ci, cfg_str(cfgs[rows[i].ci]).c_str());
        }
    }
    return 0;
}
