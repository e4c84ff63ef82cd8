/*
 * Cartesian topologies: Dims_create, Cart_create/get/coords/rank/shift/sub,
 * Cartdim_get, Cart_map, Topo_test, for 1-3 dimensions, periodic or not,
 * at any size. Every value is checked against row-major arithmetic done
 * here; reorder is 0, so cart ranks equal MPI_COMM_WORLD ranks.
 */
#include "lt.h"

#define MAXD 4

/* Row-major coordinates of rank r. */
static void coords_of(int r, int nd, const int *dims, int *co)
{
    for (int i = nd - 1; i >= 0; i--) {
        co[i] = r % dims[i];
        r /= dims[i];
    }
}

static int rank_of(int nd, const int *dims, const int *co)
{
    int r = 0;
    for (int i = 0; i < nd; i++)
        r = r * dims[i] + co[i];
    return r;
}

/* The neighbour of rank r at displacement disp along d, or MPI_PROC_NULL. */
static int step(int r, int nd, const int *dims, const int *per, int d, int disp)
{
    int co[MAXD];
    coords_of(r, nd, dims, co);
    int x = co[d] + disp;
    if (per[d])
        x = ((x % dims[d]) + dims[d]) % dims[d];
    else if (x < 0 || x >= dims[d])
        return MPI_PROC_NULL;
    co[d] = x;
    return rank_of(nd, dims, co);
}

/* Brute force of the balanced factorisation: smallest spread, then the
 * largest smallest factor, then lexicographically smallest. */
static int best[MAXD], have_best;
static void search(int n, int k, int at, int maxf, int *cur)
{
    if (at == k - 1) {
        if (n > maxf)
            return;
        cur[at] = n;
        int spread = cur[0] - cur[k - 1], bspread = best[0] - best[k - 1];
        int better = !have_best || spread < bspread ||
                     (spread == bspread && cur[k - 1] > best[k - 1]);
        if (!better && spread == bspread && cur[k - 1] == best[k - 1]) {
            for (int i = 0; i < k; i++)
                if (cur[i] != best[i]) {
                    better = cur[i] < best[i];
                    break;
                }
        }
        if (better) {
            memcpy(best, cur, sizeof(int) * k);
            have_best = 1;
        }
        return;
    }
    for (int f = maxf < n ? maxf : n; f >= 1; f--)
        if (n % f == 0) {
            cur[at] = f;
            search(n / f, k, at + 1, f, cur);
        }
}

static void check_dims_create(void)
{
    for (int n = 1; n <= 64; n++)
        for (int k = 1; k <= 4; k++) {
            int d[MAXD] = {0, 0, 0, 0}, cur[MAXD];
            have_best = 0;
            search(n, k, 0, n, cur);
            MPI_OK(MPI_Dims_create(n, k, d));
            for (int i = 0; i < k; i++)
                CHECK(d[i] == best[i], "Dims_create(%d,%d)[%d] = %d, want %d",
                      n, k, i, d[i], best[i]);
        }
    /* A fixed entry stays; the free ones share what is left. */
    int d[3] = {0, 3, 0};
    MPI_OK(MPI_Dims_create(24, 3, d));
    CHECK(d[0] == 4 && d[1] == 3 && d[2] == 2, "Dims_create(24,{0,3,0}) = %d %d %d",
          d[0], d[1], d[2]);
    int e[2] = {0, 0};
    MPI_OK(MPI_Dims_create(lt_size, 2, e));
    CHECK(e[0] * e[1] == lt_size && e[0] >= e[1], "Dims_create(size,2)");
}

static void check_cart(int nd, const int *dims, const int *per, int nprocs)
{
    int me = lt_rank;
    MPI_Comm cart;
    MPI_OK(MPI_Cart_create(MPI_COMM_WORLD, nd, dims, per, 0, &cart));
    int newrank = -5;
    MPI_OK(MPI_Cart_map(MPI_COMM_WORLD, nd, dims, per, &newrank));
    CHECK(newrank == (me < nprocs ? me : MPI_UNDEFINED), "Cart_map gave %d", newrank);
    if (me >= nprocs) {
        CHECK(cart == MPI_COMM_NULL, "rank beyond the grid got a communicator");
        return;
    }
    CHECK(cart != MPI_COMM_NULL, "rank in the grid got MPI_COMM_NULL");
    if (cart == MPI_COMM_NULL)
        return;
    int st = -1, r = -1, sz = -1, ndg = -1;
    MPI_OK(MPI_Topo_test(cart, &st));
    CHECK(st == MPI_CART, "Topo_test = %d", st);
    MPI_OK(MPI_Comm_rank(cart, &r));
    MPI_OK(MPI_Comm_size(cart, &sz));
    CHECK(r == me && sz == nprocs, "cart rank %d size %d", r, sz);
    MPI_OK(MPI_Cartdim_get(cart, &ndg));
    CHECK(ndg == nd, "Cartdim_get = %d", ndg);

    int gd[MAXD], gp[MAXD], gc[MAXD], co[MAXD];
    MPI_OK(MPI_Cart_get(cart, MAXD, gd, gp, gc));
    coords_of(me, nd, dims, co);
    for (int i = 0; i < nd; i++) {
        CHECK(gd[i] == dims[i], "Cart_get dims[%d] = %d", i, gd[i]);
        CHECK(!!gp[i] == !!per[i], "Cart_get periods[%d] = %d", i, gp[i]);
        CHECK(gc[i] == co[i], "Cart_get coords[%d] = %d want %d", i, gc[i], co[i]);
    }
    for (int q = 0; q < nprocs; q++) {
        int c2[MAXD], want[MAXD], rr = -1;
        MPI_OK(MPI_Cart_coords(cart, q, MAXD, c2));
        coords_of(q, nd, dims, want);
        for (int i = 0; i < nd; i++)
            CHECK(c2[i] == want[i], "Cart_coords(%d)[%d] = %d", q, i, c2[i]);
        MPI_OK(MPI_Cart_rank(cart, want, &rr));
        CHECK(rr == q, "Cart_rank of rank %d's coords = %d", q, rr);
        /* Periodic coordinates wrap. */
        int shifted[MAXD];
        memcpy(shifted, want, sizeof want);
        int any = 0;
        for (int i = 0; i < nd; i++)
            if (per[i]) {
                shifted[i] += dims[i] * (i + 1);
                any = 1;
            }
        if (any) {
            MPI_OK(MPI_Cart_rank(cart, shifted, &rr));
            CHECK(rr == q, "Cart_rank of wrapped coords of %d = %d", q, rr);
        }
    }
    for (int d = 0; d < nd; d++)
        for (int disp = -2; disp <= 2; disp++) {
            int src = -7, dst = -7;
            MPI_OK(MPI_Cart_shift(cart, d, disp, &src, &dst));
            int ws = step(me, nd, dims, per, d, -disp);
            int wd = step(me, nd, dims, per, d, disp);
            CHECK(src == ws && dst == wd,
                  "Cart_shift(dim %d, disp %d) = (%d,%d) want (%d,%d)", d, disp,
                  src, dst, ws, wd);
        }

    /* Every Cart_sub pattern. */
    for (int mask = 0; mask < (1 << nd); mask++) {
        int remain[MAXD], subsize = 1, subrank = 0, kept = 0;
        for (int i = 0; i < nd; i++) {
            remain[i] = (mask >> i) & 1;
            if (remain[i]) {
                subsize *= dims[i];
                subrank = subrank * dims[i] + co[i];
                kept++;
            }
        }
        MPI_Comm sub;
        MPI_OK(MPI_Cart_sub(cart, remain, &sub));
        /* MPICH gives the zero-dimensional grid to one process only; the
         * standard gives every process its own. */
        if (sub == MPI_COMM_NULL && kept == 0 && lt_running_on_mpich())
            continue;
        int ss = -1, sr = -1, sd = -1;
        MPI_OK(MPI_Comm_size(sub, &ss));
        MPI_OK(MPI_Comm_rank(sub, &sr));
        MPI_OK(MPI_Cartdim_get(sub, &sd));
        CHECK(ss == subsize && sr == subrank && sd == kept,
              "Cart_sub mask %d: size %d rank %d ndims %d, want %d %d %d", mask,
              ss, sr, sd, subsize, subrank, kept);
        if (kept > 0) {
            int sdims[MAXD], sper[MAXD], sco[MAXD], k = 0;
            MPI_OK(MPI_Cart_get(sub, MAXD, sdims, sper, sco));
            for (int i = 0; i < nd; i++)
                if (remain[i]) {
                    CHECK(sdims[k] == dims[i] && !!sper[k] == !!per[i] &&
                              sco[k] == co[i],
                          "Cart_sub mask %d: dim %d", mask, k);
                    k++;
                }
        }
        /* Members: world ranks sharing my dropped coordinates, in order. */
        int *got = malloc(sizeof(int) * subsize);
        MPI_OK(MPI_Allgather(&me, 1, MPI_INT, got, 1, MPI_INT, sub));
        for (int s = 0; s < subsize; s++) {
            int c2[MAXD], rest = s;
            memcpy(c2, co, sizeof co);
            for (int i = nd - 1; i >= 0; i--)
                if (remain[i]) {
                    c2[i] = rest % dims[i];
                    rest /= dims[i];
                }
            CHECK(got[s] == rank_of(nd, dims, c2),
                  "Cart_sub mask %d: member %d is %d", mask, s, got[s]);
        }
        free(got);
        MPI_OK(MPI_Comm_free(&sub));
    }

    /* A duplicate keeps the topology. */
    MPI_Comm dup;
    MPI_OK(MPI_Comm_dup(cart, &dup));
    MPI_OK(MPI_Topo_test(dup, &st));
    CHECK(st == MPI_CART, "Topo_test on a dup = %d", st);
    MPI_OK(MPI_Cartdim_get(dup, &ndg));
    CHECK(ndg == nd, "Cartdim_get on a dup = %d", ndg);
    MPI_OK(MPI_Comm_free(&dup));
    MPI_OK(MPI_Comm_free(&cart));
}

int main(int argc, char **argv)
{
    lt_init("topo_cart", &argc, &argv);
    check_dims_create();
    for (int nd = 1; nd <= 3; nd++)
        for (int pat = 0; pat < 3; pat++) {
            int per[MAXD];
            for (int i = 0; i < nd; i++)
                per[i] = pat == 2 ? (i % 2 == 0) : pat;
            /* The whole world, then a smaller grid. */
            for (int use = lt_size; use >= lt_size - 1 && use >= 1; use--) {
                int dims[MAXD] = {0, 0, 0, 0};
                MPI_OK(MPI_Dims_create(use, nd, dims));
                check_cart(nd, dims, per, use);
            }
        }
    /* A plain communicator has no topology. */
    int st = -1;
    MPI_Comm d;
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    MPI_OK(MPI_Topo_test(d, &st));
    CHECK(st == MPI_UNDEFINED, "Topo_test on a dup of WORLD = %d", st);
    MPI_OK(MPI_Comm_free(&d));
    /* Errors: Cartesian calls on a communicator without the topology. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int nd = 0, cls = -1;
    int rc = MPI_Cartdim_get(MPI_COMM_WORLD, &nd);
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_TOPOLOGY, "Cartdim_get on WORLD: class %d", cls);
    int dd[2] = {lt_size + 1, 1}, pp[2] = {0, 0};
    MPI_Comm big = MPI_COMM_NULL;
    rc = MPI_Cart_create(MPI_COMM_WORLD, 2, dd, pp, 0, &big);
    CHECK(rc != MPI_SUCCESS, "Cart_create larger than the communicator succeeded");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    return lt_finish();
}
