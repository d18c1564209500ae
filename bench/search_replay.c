/*
 * search_replay: the search-quality benchmark on the CPU (issue 12). Reads
 * the ground truth of one exhaustive run from a store and replays each
 * strategy with several seeds against it (src/search/replay.h): for each,
 * the evaluations needed to come within 2% of the exhaustive best (median
 * over the seeds) and the best found after 10%, 15% and 25% of the space,
 * then a convergence table. Markdown on stdout; --csv writes every
 * replay's trace (strategy,seed,evaluations,ratio) for a plot
 * (bench/search_report.py).
 *
 * Usage: search_replay TRUTH.db [--run ID] [--task PATH] [--seeds N]
 *        [--strategies evolve,model,random] [--budget F] [--csv FILE]
 *        [--scratch DIR]
 * Exit: 0, 1 a replay failed, 2 usage.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "search/replay.h"

#define MAX_STRATEGIES 8
#define MAX_SEEDS      64

static const double fractions[] = {0.01, 0.02, 0.05, 0.10, 0.15, 0.20, 0.25, 0.35, 0.50};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void usage(FILE *f)
{
    fputs("usage: search_replay TRUTH.db [--run ID] [--task PATH] [--seeds N] [--strategies LIST]\n"
          "                     [--budget F] [--csv FILE] [--scratch DIR]\n"
          "  --run ID          the exhaustive run (default: the latest exhaustive run)\n"
          "  --task PATH       load the task from PATH (default: the run's stored spec)\n"
          "  --seeds N         seeds per strategy (default 5)\n"
          "  --strategies L    comma-separated (default evolve,model,random)\n"
          "  --budget F        evaluations per replay, as a share of the space (default 0.5)\n"
          "  --csv FILE        write every trace: strategy,seed,evaluations,ratio\n"
          "  --scratch DIR     where the scratch stores go (default /tmp)\n",
          f);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"run", required_argument, NULL, 'r'},     {"task", required_argument, NULL, 't'},
        {"seeds", required_argument, NULL, 's'},   {"strategies", required_argument, NULL, 'S'},
        {"budget", required_argument, NULL, 'b'},  {"csv", required_argument, NULL, 'c'},
        {"scratch", required_argument, NULL, 'd'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    long run_id = 0, nseeds = 5;
    double budget_frac = 0.5;
    const char *task_path = NULL, *csv_path = NULL, *scratch = "/tmp";
    char strategies_buf[256] = "evolve,model,random";
    int o;
    while ((o = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        char *end = NULL;
        switch (o) {
        case 'r': run_id = strtol(optarg, &end, 10); break;
        case 't': task_path = optarg; break;
        case 's': nseeds = strtol(optarg, &end, 10); break;
        case 'S': snprintf(strategies_buf, sizeof(strategies_buf), "%s", optarg); break;
        case 'b': budget_frac = strtod(optarg, &end); break;
        case 'c': csv_path = optarg; break;
        case 'd': scratch = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if (end && (*end || end == optarg)) {
            fprintf(stderr, "search_replay: bad number '%s'\n", optarg);
            return 2;
        }
    }
    if (optind != argc - 1 || nseeds < 1 || nseeds > MAX_SEEDS || !(budget_frac > 0 && budget_frac <= 1)) {
        usage(stderr);
        return 2;
    }
    const char *strategies[MAX_STRATEGIES];
    int ns = 0;
    for (char *tok = strtok(strategies_buf, ","); tok && ns < MAX_STRATEGIES; tok = strtok(NULL, ","))
        strategies[ns++] = tok;

    EvoErr err;
    ReplayTruth *t = NULL;
    if (replay_truth_load(&t, argv[optind], run_id, task_path, &err)) {
        fprintf(stderr, "search_replay: %s\n", err.msg);
        return 1;
    }
    const char *best_key;
    double best = replay_truth_best(t, &best_key);
    int space = replay_truth_size(t), budget = (int)ceil(budget_frac * space);
    printf("truth: run %lld of %s, task %s, %d configurations, best %.3f us (%s)\n\n",
           (long long)replay_truth_run(t), argv[optind], task_name(replay_truth_task(t)), space, best, best_key);
    FILE *csv = csv_path ? fopen(csv_path, "w") : NULL;
    if (csv_path && !csv) {
        fprintf(stderr, "search_replay: %s: cannot write\n", csv_path);
        replay_truth_free(&t);
        return 1;
    }
    if (csv)
        fprintf(csv, "strategy,seed,evaluations,ratio\n");
    char *scratch_db = xasprintf("%s/search_replay_%d.db", scratch, (int)getpid());
    static ReplayResult res[MAX_STRATEGIES][MAX_SEEDS];
    int rc = 0;
    for (int k = 0; k < ns && rc == 0; k++)
        for (int s = 0; s < nseeds && rc == 0; s++) {
            if (replay_run(t, strategies[k], (uint64_t)s + 1, budget, scratch_db, &res[k][s], &err)) {
                fprintf(stderr, "search_replay: %s seed %d: %s\n", strategies[k], s + 1, err.msg);
                rc = 1;
            }
            for (int i = 0; csv && i < res[k][s].n; i++)
                fprintf(csv, "%s,%d,%d,%.6f\n", strategies[k], s + 1, i + 1, res[k][s].trace[i]);
        }
    if (rc == 0) {
        printf("| strategy | evaluations to within 2%% (median of %ld seeds) | per seed | best / exhaustive "
               "after 10%% | 15%% | 25%% |\n|---|---|---|---|---|---|\n", nseeds);
        for (int k = 0; k < ns; k++) {
            double v[MAX_SEEDS], a[3][MAX_SEEDS];
            char per[512] = "";
            size_t used = 0;
            for (int s = 0; s < nseeds; s++) {
                v[s] = res[k][s].to_target < 0 ? INFINITY : res[k][s].to_target;
                if (used < sizeof(per))
                    used += (size_t)snprintf(per + used, sizeof(per) - used, "%s%s%d", s ? " " : "",
                                             res[k][s].to_target < 0 ? ">" : "",
                                             res[k][s].to_target < 0 ? res[k][s].n : res[k][s].to_target);
                const double f3[3] = {0.10, 0.15, 0.25};
                for (int j = 0; j < 3; j++)
                    a[j][s] = replay_ratio_at(&res[k][s], (int)ceil(f3[j] * space));
            }
            double m = median(v, (int)nseeds);
            char mt[64];
            if (isinf(m))
                snprintf(mt, sizeof(mt), "not within %d", budget);
            else
                snprintf(mt, sizeof(mt), "%.0f (%.1f%% of the space)", m, 100.0 * m / space);
            printf("| %s | %s | %s | %.4f | %.4f | %.4f |\n", strategies[k], mt, per, median(a[0], (int)nseeds),
                   median(a[1], (int)nseeds), median(a[2], (int)nseeds));
        }
        printf("\nconvergence: median over seeds of best / exhaustive best after a share of the space\n\n"
               "| evaluations | share |");
        for (int k = 0; k < ns; k++)
            printf(" %s |", strategies[k]);
        printf("\n|---|---|");
        for (int k = 0; k < ns; k++)
            printf("---|");
        printf("\n");
        for (size_t j = 0; j < sizeof(fractions) / sizeof(fractions[0]) && fractions[j] <= budget_frac; j++) {
            int e = (int)ceil(fractions[j] * space);
            printf("| %d | %.0f%% |", e, 100 * fractions[j]);
            for (int k = 0; k < ns; k++) {
                double v[MAX_SEEDS];
                for (int s = 0; s < nseeds; s++)
                    v[s] = replay_ratio_at(&res[k][s], e);
                printf(" %.4f |", median(v, (int)nseeds));
            }
            printf("\n");
        }
    }
    for (int k = 0; k < ns; k++)
        for (int s = 0; s < nseeds; s++)
            replay_result_free(&res[k][s]);
    if (csv && fclose(csv) != 0)
        rc = 1;
    free(scratch_db);
    replay_truth_free(&t);
    if (fclose(stdout) != 0)
        rc = 1;
    return rc;
}
