/* Offsets, the ILP tier (through the GLPK wrapper, solvers/glpk.c).
 *
 * Variables, in units of g = the GCD of the (aligned) sizes (canonical
 * packings put every buffer at a sum of sizes, so nothing is lost):
 *   x_i   integer offset of buffer i, 0 <= x_i <= U - s_i
 *   H     the arena, LB <= H <= U, minimised
 *   z_ij  binary for each pair (i < j) that overlaps in time:
 *         z = 0: i lies below j, z = 1: j lies below i
 * Rows:
 *   x_i - H <= -s_i
 *   x_i - x_j - U z_ij <= -s_i          (z = 0: x_i + s_i <= x_j)
 *   x_j - x_i + U z_ij <= U - s_j       (z = 1: x_j + s_j <= x_i)
 * U is the capacity (decision) or the seed's arena (minimisation), so the
 * big-M is as small as the instance allows. Pairs that never overlap in
 * time get no variable. The seed packing is the warm start. Meant for small
 * instances and certificates: the LP relaxation of big-M models is weak.
 */
#include "mp_glpk.h"
#include "offsets_exact.h"

#include <string.h>

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

mp_status mp__ofs_ilp(const mp__ofs_prob *p, const uint64_t *seed_off,
                     uint64_t seed_arena, uint64_t capacity,
                     double time_limit, uint64_t *off_out,
                     mp__ofs_ilp_res *res)
{
    mp_ctx *ctx = p->ctx;
    memset(res, 0, sizeof *res);
    res->arena = UINT64_MAX;
    res->proven_lb = p->lb;
    res->status = MP_SOLVE_NONE;
    double t0 = mp__now_seconds();
    if (!mp__glpk_available())
        return mp__err(ctx, MP_ERR_UNSUPPORTED,
                      "offsets: the ILP tier needs GLPK (configure with "
                      "-DMEMPLAN_WITH_GLPK=ON)");
    uint32_t n = p->n;
    if (n == 0) {
        res->arena = 0;
        res->status = MP_SOLVE_OPTIMAL;
        return MP_OK;
    }
    if (capacity && capacity < p->lb) {
        res->status = MP_SOLVE_INFEASIBLE;
        res->proven_lb = p->lb;
        return MP_OK;
    }
    uint64_t g = 0;
    for (uint32_t i = 0; i < n; i++)
        g = gcd_u64(g, p->size[i]);
    uint64_t U = capacity ? capacity : seed_arena;
    if (!seed_off && !capacity)
        U = p->total; /* stacking everything always fits */
    U /= g;
    if (U > (1ull << 40))
        return mp__err(ctx, MP_ERR_UNSUPPORTED,
                      "offsets: ILP tier: sizes too large against their GCD "
                      "(%llu units)",
                      (unsigned long long)U);
    /* the warm start must fit U and the unit grid */
    int warm = seed_off != NULL;
    for (uint32_t i = 0; warm && i < n; i++)
        if (seed_off[i] % g || (seed_off[i] + p->size[i]) / g > U)
            warm = 0;
    mp__lp *lp = NULL;
    double *ws = NULL;
    mp_status st = mp__lp_create(ctx, 0, &lp);
    if (st != MP_OK)
        return st;
    double dU = (double)U;
    uint32_t H;
    uint64_t lbu = (p->lb + g - 1) / g;
    if ((st = mp__lp_add_col(lp, (double)lbu, dU, MP__LP_INTEGER, 1, &H)))
        goto out;
    for (uint32_t i = 0; i < n; i++) {
        double s = (double)(p->size[i] / g);
        uint32_t x, cols[2];
        double vals[2] = {1, -1};
        if ((st = mp__lp_add_col(lp, 0, dU - s, MP__LP_INTEGER, 0, &x)))
            goto out;
        cols[0] = x;
        cols[1] = H;
        if ((st = mp__lp_add_row(lp, -MP__LP_INF, -s, 2, cols, vals, NULL)))
            goto out;
    }
    /* column of x_i is 1 + i */
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t j = i + 1; j < n; j++) {
            if (!(p->l[i] < p->r[j] && p->l[j] < p->r[i]))
                continue;
            double si = (double)(p->size[i] / g), sj = (double)(p->size[j] / g);
            uint32_t z;
            if ((st = mp__lp_add_col(lp, 0, 1, MP__LP_BINARY, 0, &z)))
                goto out;
            uint32_t c1[3] = {1 + i, 1 + j, z};
            double v1[3] = {1, -1, -dU};
            if ((st = mp__lp_add_row(lp, -MP__LP_INF, -si, 3, c1, v1, NULL)))
                goto out;
            double v2[3] = {-1, 1, dU};
            if ((st = mp__lp_add_row(lp, -MP__LP_INF, dU - sj, 3, c1, v2,
                                    NULL)))
                goto out;
        }
    }
    mp__lp_options o;
    mp__lp_options_init(&o);
    o.time_limit = time_limit > 0 ? time_limit : 10.0;
    if (warm) {
        uint32_t nc = mp__lp_num_cols(lp);
        ws = mp__alloc(ctx, (size_t)nc * sizeof *ws);
        if (!ws) {
            st = MP_ERR_NOMEM;
            goto out;
        }
        uint64_t a = 0;
        for (uint32_t i = 0; i < n; i++) {
            ws[1 + i] = (double)(seed_off[i] / g);
            if (seed_off[i] + p->size[i] > a)
                a = seed_off[i] + p->size[i];
        }
        ws[H] = (double)((a + g - 1) / g);
        if (ws[H] < (double)lbu)
            ws[H] = (double)lbu;
        uint32_t k = 1 + n;
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t j = i + 1; j < n; j++)
                if (p->l[i] < p->r[j] && p->l[j] < p->r[i])
                    ws[k++] = seed_off[i] >= seed_off[j] + p->size[j];
        o.warm_start = ws;
    }
    mp__lp_result r;
    st = mp__lp_solve(lp, &o, &r);
    if (st != MP_OK)
        goto out;
    res->status = r.status;
    if (r.status == MP_SOLVE_INFEASIBLE) {
        /* nothing fits U: with a capacity, that is the answer */
        res->proven_lb = capacity ? capacity + 1 : p->lb;
    } else if (isfinite(r.bound) && r.bound > 0) {
        uint64_t b = (uint64_t)ceil(r.bound - 1e-6) * g;
        if (b > res->proven_lb)
            res->proven_lb = b;
    }
    const double *x = mp__lp_values(lp);
    if (r.has_solution && x) {
        uint64_t a = 0;
        for (uint32_t i = 0; i < n; i++) {
            off_out[i] = (uint64_t)llround(x[1 + i]) * g;
            if (off_out[i] + p->size[i] > a)
                a = off_out[i] + p->size[i];
        }
        res->arena = a;
        if (r.status == MP_SOLVE_OPTIMAL)
            res->proven_lb = a;
    }
out:
    res->seconds = mp__now_seconds() - t0;
    mp__dealloc(ctx, ws);
    mp__lp_destroy(lp);
    return st;
}
