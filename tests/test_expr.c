/* Unit tests for expr: values, promotion, checked arithmetic, errors with
 * columns, nesting limits, introspection, and a deterministic mini-fuzz. */
#include "testhelp.h"
#include "task/expr.h"

#include <stdlib.h>

typedef struct Var {
    const char *name;
    ExprValue   v;
} Var;

static const Var vars[] = {
    {"BLOCK_M", {0, 64, 0}}, {"N", {0, 1000, 0}}, {"A", {0, 5, 0}}, {"B", {0, 7, 0}},
    {"HALF", {1, 0, 0.5}}, {"ZERO", {0, 0, 0}}, {"BIG", {0, INT64_MAX, 0}},
};

static int lookup(void *ctx, const char *name, ExprValue *out)
{
    int *calls = ctx;
    if (calls)
        (*calls)++;
    for (size_t i = 0; i < EVO_ARRAY_LEN(vars); i++)
        if (strcmp(vars[i].name, name) == 0) {
            *out = vars[i].v;
            return 1;
        }
    return 0;
}

/* Evaluate text; returns 0 and the value, or -1 with err. */
static int ev(const char *text, ExprValue *v, EvoErr *err)
{
    memset(err, 0, sizeof(*err));
    return expr_eval_string(text, lookup, NULL, v, err);
}

static void check_int(const char *text, int64_t want)
{
    ExprValue v;
    EvoErr err;
    int rc = ev(text, &v, &err);
    CHECK_MSG(rc == 0, "'%s': %s", text, err.msg);
    CHECK_MSG(rc != 0 || (!v.is_float && v.i == want), "'%s' = %lld (float %d), expected %lld", text, (long long)v.i,
              v.is_float, (long long)want);
}

static void check_float(const char *text, double want)
{
    ExprValue v;
    EvoErr err;
    int rc = ev(text, &v, &err);
    CHECK_MSG(rc == 0, "'%s': %s", text, err.msg);
    CHECK_MSG(rc != 0 || (v.is_float && fabs(v.f - want) < 1e-12), "'%s' = %g (float %d), expected %g", text, v.f,
              v.is_float, want);
}

static void check_err(const char *text, const char *want)
{
    ExprValue v;
    EvoErr err;
    int rc = ev(text, &v, &err);
    CHECK_MSG(rc < 0, "'%s' should fail with '%s'", text, want);
    if (rc < 0)
        CHECK_CONTAINS(err.msg, want);
}

static void test_values(void)
{
    check_int("1 + 2 * 3", 7);
    check_int("(1 + 2) * 3", 9);
    check_int("10 - 4 - 3", 3);
    check_int("7 / 2", 3);
    check_int("-7 / 2", -3);
    check_int("-7 % 3", -1);
    check_int("7 % -3", 1);
    check_int("2 * -3", -6);
    check_int("--3", 3);
    check_int("+4", 4);
    check_int("!0 + !5", 1);
    check_int("1 < 2 && 2 <= 2 && 3 > 2 && 3 >= 3 && 1 == 1 && 1 != 2", 1);
    check_int("1 < 2 == 1", 1);
    check_int("0 || 0", 0);
    check_int("2 || 0", 1);
    check_int("1 + 2 < 4 && 5 > 4", 1);
    check_int("min(3, 2) + max(3, 2)", 5);
    check_int("ceil_div(7, 2)", 4);
    check_int("ceil_div(6, 3)", 2);
    check_int("ceil_div(-7, 2)", -3);
    check_int("ceil_div(7, -2)", -3);
    check_int("ceil_div(-7, -2)", 4);
    check_int("ceil_div(0, 5)", 0);
    check_int("BLOCK_M * 2 + N", 1128);
    check_int("ceil_div(N, BLOCK_M)", 16);
    check_int("9223372036854775807", INT64_MAX);
    check_int("-9223372036854775807 - 1", INT64_MIN);
    check_int("(-9223372036854775807 - 1) % -1", 0);
    check_int("1 == 1.0", 1);
    check_int("2.5 >= 3", 0);
    check_int("HALF && 1", 1);
    check_int("0.0 || 0", 0);
    check_int("\t1 +\n 1 ", 2);
    check_float("1 + 0.5", 1.5);
    check_float("7 / 2.0", 3.5);
    check_float("1 / sqrt(64)", 0.125);
    check_float("sqrt(16)", 4.0);
    check_float("min(3, 2.5)", 2.5);
    check_float("max(3, 2.5)", 3.0);
    check_float("ceil_div(7.0, 2)", 4.0);
    check_float("1e-2 * 100", 1.0);
    check_float(".5 + 1.", 1.5);
    check_float("2.5E+1", 25.0);
    check_float("HALF * N", 500.0);
    check_float("-HALF", -0.5);
    check_float("7.5 % 2", 1.5);
}

static void test_short_circuit(void)
{
    check_int("0 && 1 / 0", 0);
    check_int("1 || 1 / 0", 1);
    check_int("ZERO > 0 && N / ZERO > 1", 0);
    check_err("1 && 1 / 0", "column 8: division by zero");
}

static void test_errors(void)
{
    check_err("(1 + 2", "column 7: expected ')', found end of expression");
    check_err("min(1, (2)", "column 11: expected ',' or ')' in call to min");
    check_err("1 +", "column 4: expected a number, a name or '(', found end of expression");
    check_err("1 + * 2", "column 5: expected a number, a name or '('");
    check_err("1 2", "column 3: expected an operator, found '2'");
    check_err("1 + 2)", "column 6: unmatched ')'");
    check_err("", "column 1: empty expression");
    check_err("   ", "column 1: empty expression");
    check_err("foo(1)", "column 1: unknown function 'foo'");
    check_err("min(1)", "column 1: min expects 2 arguments, got 1");
    check_err("sqrt(1, 2)", "column 1: sqrt expects 1 argument, got 2");
    check_err("max()", "max expects 2 arguments, got 0");
    check_err("1 = 2", "column 3: unexpected '=' (did you mean '=='?)");
    check_err("1 & 2", "did you mean '&&'?");
    check_err("1 | 2", "did you mean '||'?");
    check_err("2 $ 3", "column 3: unexpected character '$'");
    check_err("2 \x01", "column 3: unexpected character 0x01");
    check_err("99999999999999999999", "column 1: integer literal out of range");
    check_err("1e", "column 1: malformed number");
    check_err("12abc", "column 1: malformed number");
    check_err("1.2.3", "column 1: malformed number");
    check_err("1e999", "column 1: number out of range");
    check_err("BLOK_M + 1", "column 1: unknown variable 'BLOK_M'");
    check_err("1 + BLOK_M", "column 5: unknown variable 'BLOK_M'");
    check_err("N / ZERO", "column 3: division by zero");
    check_err("N % 0", "column 3: division by zero");
    check_err("1 / 0.0", "column 3: division by zero");
    check_err("1.5 % 0", "column 5: division by zero");
    check_err("ceil_div(1, 0)", "column 1: division by zero in ceil_div");
    check_err("ceil_div(1.0, 0)", "division by zero in ceil_div");
    check_err("sqrt(-1)", "column 1: sqrt of a negative number");
    check_err("9223372036854775807 + 1", "column 21: integer overflow");
    check_err("BIG * 2", "column 5: integer overflow");
    check_err("-9223372036854775807 - 2", "column 22: integer overflow");
    check_err("3037000500 * 3037000500", "column 12: integer overflow");
    check_err("(-9223372036854775807 - 1) / -1", "column 28: integer overflow");
    check_err("-(-9223372036854775807 - 1)", "column 1: integer overflow");
    check_err("ceil_div(-9223372036854775807 - 1, -1)", "integer overflow");
    check_err("1e308 * 10", "column 7: float result is not finite");
}

static void test_nesting(void)
{
    /* Deep parentheses, unary chains and long operator chains fail cleanly. */
    size_t n = 100000;
    char *s = xmalloc(2 * n + 2);
    memset(s, '(', n);
    s[n] = '1';
    memset(s + n + 1, ')', n);
    s[2 * n + 1] = 0;
    check_err(s, "too deeply nested");
    memset(s, '-', n);
    s[n] = '1';
    s[n + 1] = 0;
    check_err(s, "too deeply nested");
    memset(s, '!', n);
    check_err(s, "too deeply nested");
    StrBuf sb = {0};
    for (int i = 0; i < 5000; i++)
        sb_append(&sb, i ? "+1" : "1");
    check_err(sb.s, "too deeply nested");
    sb_clear(&sb);
    for (int i = 0; i < 500; i++)
        sb_append(&sb, i ? "+1" : "1");
    check_int(sb.s, 500);
    sb_clear(&sb);
    for (int i = 0; i < 100; i++)
        sb_append(&sb, "(");
    sb_append(&sb, "7");
    for (int i = 0; i < 100; i++)
        sb_append(&sb, ")");
    check_int(sb.s, 7);
    sb_free(&sb);
    free(s);
}

static void test_introspection(void)
{
    Expr *e = NULL;
    EvoErr err;
    int col = 0, calls = 0;
    CHECK(expr_parse("min(BLOCK_M, N) + BLOCK_M", &e, &err) == 0);
    CHECK(expr_nvars(e) == 3);
    CHECK_STR(expr_var(e, 0, &col), "BLOCK_M");
    CHECK(col == 5);
    CHECK_STR(expr_var(e, 1, &col), "N");
    CHECK(col == 14);
    CHECK_STR(expr_var(e, 2, &col), "BLOCK_M");
    CHECK(col == 19);
    CHECK(expr_var(e, 3, &col) == NULL);
    CHECK(!expr_is_var(e, NULL));
    CHECK_STR(expr_text(e), "min(BLOCK_M, N) + BLOCK_M");
    /* one parse, many evaluations */
    ExprValue v;
    for (int i = 0; i < 1000; i++)
        CHECK(expr_eval(e, lookup, &calls, &v, &err) == 0 && v.i == 128);
    CHECK(calls == 3000);
    expr_free(&e);
    CHECK(e == NULL);
    expr_free(&e);

    const char *name = NULL;
    CHECK(expr_parse(" N ", &e, &err) == 0);
    CHECK(expr_is_var(e, &name) && strcmp(name, "N") == 0);
    expr_free(&e);

    CHECK(expr_parse("A * 2 <= B", &e, &err) == 0);
    char *ex = expr_explain(e, lookup, NULL);
    CHECK_STR(ex, "10 <= 7");
    free(ex);
    expr_free(&e);
    CHECK(expr_parse("A * 2", &e, &err) == 0);
    CHECK(expr_explain(e, lookup, NULL) == NULL);
    expr_free(&e);

    CHECK(expr_parse("1 +", &e, &err) < 0 && e == NULL);

    const char *names[] = {"BLOCK_M", "BLOCK_N", NULL, "STAGES", "D"};
    CHECK_STR(expr_closest("BLOK_M", names, 5), "BLOCK_M");
    CHECK_STR(expr_closest("block_n", names, 5), "BLOCK_N");
    CHECK_STR(expr_closest("STAGE", names, 5), "STAGES");
    CHECK(expr_closest("XYZZY", names, 5) == NULL);
    CHECK(expr_closest("Q", names, 5) == NULL || strcmp(expr_closest("Q", names, 5), "D") == 0);

    char buf[40];
    ExprValue iv = {0, -42, 0}, fv = {1, 0, 0.25};
    CHECK_STR(expr_value_str(iv, buf, sizeof(buf)), "-42");
    CHECK_STR(expr_value_str(fv, buf, sizeof(buf)), "0.25");
}

static int slot_lookup(void *ctx, int slot, ExprValue *out)
{
    const int64_t *table = ctx;
    if (slot < 0 || slot > 2)
        return 0;
    out->is_float = 0;
    out->i = table[slot];
    return 1;
}

static void test_slots(void)
{
    Expr *e = NULL;
    EvoErr err;
    ExprValue v;
    int64_t table[3] = {10, 20, 30};
    CHECK(expr_parse("X * 2 + Y - X + Q", &e, &err) == 0);
    expr_set_slot(e, 0, 0); /* X */
    expr_set_slot(e, 1, 1); /* Y */
    expr_set_slot(e, 2, 0); /* X again */
    expr_set_slot(e, 9, 2); /* out of range: ignored */
    /* Q has no slot: unknown */
    CHECK(expr_eval_slots(e, slot_lookup, table, &v, &err) < 0);
    CHECK_STR(err.msg, "column 17: unknown variable 'Q'");
    expr_set_slot(e, 3, 2);
    CHECK(expr_eval_slots(e, slot_lookup, table, &v, &err) == 0);
    CHECK(!v.is_float && v.i == 60);
    table[0] = 1;
    CHECK(expr_eval_slots(e, slot_lookup, table, &v, &err) == 0 && v.i == 51);
    expr_free(&e);
    CHECK(expr_parse("X * 3 > Y", &e, &err) == 0);
    expr_set_slot(e, 0, 0);
    expr_set_slot(e, 1, 1);
    char *ex = expr_explain_slots(e, slot_lookup, table);
    CHECK_STR(ex, "3 > 20");
    free(ex);
    expr_free(&e);
}

/* A random string of min_tok to min_tok + span - 1 tokens of toks, joined
 * by sep, into buf (size bytes; tokens that do not fit are left out). */
static void random_text(uint64_t *state, const char *const *toks, size_t ntoks, int min_tok, int span,
                        const char *sep, char *buf, size_t size)
{
    size_t len = 0, sl = strlen(sep);
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    int ntok = min_tok + (int)((*state >> 33) % (uint64_t)span);
    buf[0] = 0;
    for (int k = 0; k < ntok; k++) {
        *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
        const char *t = toks[(*state >> 33) % ntoks];
        size_t tl = strlen(t);
        if (len + tl + sl + 1 > size)
            break;
        memcpy(buf + len, t, tl);
        memcpy(buf + len + tl, sep, sl + 1);
        len += tl + sl;
    }
}

/* Partial evaluation: three variables X, Y, Z by slot, each known or not. */
typedef struct Partial {
    int64_t val[3];
    int     known[3];
} Partial;

static int partial_lookup(void *ctx, int slot, ExprValue *out)
{
    const Partial *p = ctx;
    if (slot < 0 || slot > 2 || !p->known[slot])
        return 0;
    out->is_float = 0;
    out->i = p->val[slot];
    return 1;
}

/* Parse text over X, Y, Z with their slots bound. */
static Expr *parse_xyz(const char *text)
{
    Expr *e = NULL;
    EvoErr err;
    if (expr_parse(text, &e, &err) < 0)
        return NULL;
    for (int i = 0; i < expr_nvars(e); i++) {
        const char *n = expr_var(e, i, NULL);
        expr_set_slot(e, i, n[1] ? -1 : n[0] == 'X' ? 0 : n[0] == 'Y' ? 1 : n[0] == 'Z' ? 2 : -1);
    }
    return e;
}

/* expr_eval_partial(text) with X, Y, Z = x, y, z where known (known: a
 * string of three 0/1): 1 and the value in *v when decided, else 0. */
static int partial(const char *text, const char *known, int64_t x, int64_t y, int64_t z, int64_t *v)
{
    Partial p = {{x, y, z}, {known[0] == '1', known[1] == '1', known[2] == '1'}};
    Expr *e = parse_xyz(text);
    ExprValue r = {0};
    int rc = e && expr_eval_partial(e, partial_lookup, &p, &r);
    *v = r.i;
    expr_free(&e);
    return rc;
}

static void test_partial(void)
{
    int64_t v = -1;
    /* a false operand of && or a true one of || decides, on either side */
    CHECK(partial("X == 0 || Y == 4", "110", 1, 2, 0, &v) == 1 && v == 0);
    CHECK(partial("X == 0 || Y == 4 && Z == 1", "110", 1, 4, 0, &v) == 0);
    CHECK(partial("X == 0 || Y == 4 && Z == 1", "110", 1, 3, 0, &v) == 1 && v == 0);
    CHECK(partial("X && Y", "010", 0, 0, 0, &v) == 1 && v == 0);
    CHECK(partial("X || Y", "010", 0, 5, 0, &v) == 1 && v == 1);
    CHECK(partial("X || Y", "010", 0, 0, 0, &v) == 0);
    CHECK(partial("!(X && Y) + 2", "100", 0, 0, 0, &v) == 1 && v == 3);
    CHECK(partial("min(X, Y) * 2", "110", 3, 4, 0, &v) == 1 && v == 6);
    /* anything else needs every variable it reads */
    CHECK(partial("X * 0 == 0", "000", 0, 0, 0, &v) == 0);
    CHECK(partial("X + Y > 3", "100", 9, 0, 0, &v) == 0);
    CHECK(partial("max(X, Y) > 3", "100", 9, 0, 0, &v) == 0);
    /* a known part that fails to evaluate decides nothing */
    CHECK(partial("Y / X > 0 || Z", "110", 0, 1, 0, &v) == 0);
    CHECK(partial("X / Y", "110", 4, 2, 0, &v) == 1 && v == 2);

    /* the contract on random expressions: a decided value is what every
     * completion of the unknown variables evaluates to (or fails) */
    static const char *const toks[] = {"X", "Y", "Z", "0", "1", "2", "+", "-", "*", "/", "%", "==", "!=", "<",
                                       "&&", "||", "!", "(", ")", "min(", ",", ")"};
    uint64_t state = 0x2545F4914F6CDD1DULL;
    int exprs = 0, decided = 0, wrong = 0;
    char buf[160];
    while (exprs < 600) {
        random_text(&state, toks, EVO_ARRAY_LEN(toks), 3, 12, " ", buf, sizeof(buf));
        Expr *e = parse_xyz(buf);
        if (!e)
            continue;
        exprs++;
        for (int a = 0; a < 27; a++)
            for (int mask = 0; mask < 8; mask++) {
                Partial p = {{a % 3, a / 3 % 3, a / 9}, {mask & 1, mask >> 1 & 1, mask >> 2 & 1}};
                ExprValue pv;
                if (!expr_eval_partial(e, partial_lookup, &p, &pv))
                    continue;
                decided++;
                for (int b = 0; b < 27; b++) {
                    Partial q = {{p.known[0] ? p.val[0] : b % 3, p.known[1] ? p.val[1] : b / 3 % 3,
                                  p.known[2] ? p.val[2] : b / 9}, {1, 1, 1}};
                    ExprValue fv;
                    EvoErr err;
                    if (expr_eval_slots(e, partial_lookup, &q, &fv, &err) == 0 &&
                        (fv.is_float != pv.is_float || expr_value_f(fv) != expr_value_f(pv))) {
                        if (wrong++ < 3)
                            fprintf(stderr, "  '%s': decided %g, a completion gives %g\n", buf, expr_value_f(pv),
                                    expr_value_f(fv));
                    }
                }
            }
        expr_free(&e);
    }
    printf("     partial: %d random expressions, %d decided cases\n", exprs, decided);
    CHECK(decided > 1000);
    CHECK(wrong == 0);
}

/* A deterministic mini-fuzz: random strings of tokens through parse and
 * eval. Every failure must carry a "column N: " message. */
static void test_mini_fuzz(void)
{
    static const char *const toks[] = {
        "1", "0", "2", "7", "-", "+", "*", "/", "%", "(", ")", "(", ")", ",", "<", "<=", ">", ">=", "==", "!=",
        "&&", "||", "!", "min(", "max(", "ceil_div(", "sqrt(", "N", "A", "BIG", "ZERO", "HALF", "nope", "0.5",
        "1e3", "9223372036854775807", " ", "=", "&", "$", "1.", ".", "e", "_x",
    };
    uint64_t state = 0x9E3779B97F4A7C15ULL;
    int parsed = 0, evaluated = 0, bad_msgs = 0;
    char buf[256];
    for (int iter = 0; iter < 200000; iter++) {
        random_text(&state, toks, EVO_ARRAY_LEN(toks), 1, 14, "", buf, sizeof(buf));
        Expr *e = NULL;
        EvoErr err = {{0}};
        ExprValue v;
        if (expr_parse(buf, &e, &err) < 0) {
            bad_msgs += strncmp(err.msg, "column ", 7) != 0;
            continue;
        }
        parsed++;
        if (expr_eval(e, lookup, NULL, &v, &err) == 0)
            evaluated++;
        else
            bad_msgs += strncmp(err.msg, "column ", 7) != 0;
        expr_free(&e);
    }
    printf("     mini-fuzz: 200000 inputs, %d parsed, %d evaluated\n", parsed, evaluated);
    CHECK(parsed > 1000);
    CHECK(evaluated > 1000);
    CHECK(bad_msgs == 0);
}

int main(void)
{
    RUN(test_values);
    RUN(test_short_circuit);
    RUN(test_errors);
    RUN(test_nesting);
    RUN(test_introspection);
    RUN(test_slots);
    RUN(test_partial);
    RUN(test_mini_fuzz);
    return test_report();
}
