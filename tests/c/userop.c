/*
 * User-defined reduction operations (MPI_Op_create/free/commutative,
 * MPI_Reduce_local) in every reduction collective.
 *
 * The non-commutative op composes affine maps x -> a*x + b (mod P), packed
 * into one long: "f op g" applies f first, then g. Every result is compared
 * with the rank-order composition computed locally, so a collective that
 * reorders operands fails. A commutative user op (max of |x|, on ints) is
 * compared with a local computation too.
 */
#include "lt.h"

#define P 65521L

static long mk(long a, long b) { return (a << 32) | b; }
static long fa(long f) { return f >> 32; }
static long fb(long f) { return f & 0xffffffffL; }

/* Apply f, then g. */
static long compose(long f, long g)
{
    return mk(fa(g) * fa(f) % P, (fa(g) * fb(f) + fb(g)) % P);
}

static int calls_bad_type = 0;

static void affine_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    long *a = in, *b = inout;
    if (*dt != MPI_LONG)
        calls_bad_type++;
    for (int i = 0; i < *len; i++)
        b[i] = compose(a[i], b[i]);
}

static void absmax_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int *a = in, *b = inout;
    (void)dt;
    for (int i = 0; i < *len; i++) {
        int x = abs(a[i]), y = abs(b[i]);
        b[i] = x > y ? x : y;
    }
}

/* Rank r's element i. */
static long contrib(int r, int i)
{
    return mk((r * 7 + i * 3 + 2) % P, (r * 13 + i * 5 + 1) % P);
}

/* Ranks lo..hi-1 composed in rank order (identity when empty). */
static long fold(int lo, int hi, int i)
{
    long acc = mk(1, 0);
    for (int r = lo; r < hi; r++)
        acc = compose(acc, contrib(r, i));
    return acc;
}

static int ival(int r, int i) { return ((r * 31 + i * 17) % 23) - 11; }

/* The absmax fold over n ranks: one rank's value is never passed to the op. */
static int absmax_want(int n, int i)
{
    int want = ival(0, i);
    for (int q = 1; q < n; q++) {
        int x = abs(want), y = abs(ival(q, i));
        want = x > y ? x : y;
    }
    return want;
}

int main(int argc, char **argv)
{
    lt_init("userop", &argc, &argv);
    int n = lt_size, me = lt_rank;
    MPI_Op aff, amax;
    MPI_OK(MPI_Op_create(affine_op, 0, &aff));
    MPI_OK(MPI_Op_create(absmax_op, 1, &amax));

    int commute = -1;
    MPI_OK(MPI_Op_commutative(aff, &commute));
    CHECK(commute == 0, "affine op reports commute=%d", commute);
    MPI_OK(MPI_Op_commutative(amax, &commute));
    CHECK(commute == 1, "absmax op reports commute=%d", commute);
    MPI_OK(MPI_Op_commutative(MPI_SUM, &commute));
    CHECK(commute == 1, "MPI_SUM reports commute=%d", commute);

    /* Small, medium and large (past the 64 KiB algorithm switch) vectors. */
    int counts[] = {1, 7, 20000};
    for (int ci = 0; ci < 3; ci++) {
        int cnt = counts[ci];
        long *s = malloc(sizeof(long) * cnt * n);
        long *rbuf = malloc(sizeof(long) * cnt * n);
        for (int i = 0; i < cnt; i++)
            s[i] = contrib(me, i);

        for (int root = 0; root < n; root++) {
            for (int i = 0; i < cnt; i++)
                rbuf[i] = -1;
            MPI_OK(MPI_Reduce(s, rbuf, cnt, MPI_LONG, aff, root, MPI_COMM_WORLD));
            if (me == root)
                for (int i = 0; i < cnt; i++)
                    CHECK(rbuf[i] == fold(0, n, i),
                          "Reduce cnt %d root %d [%d]: %lx want %lx", cnt,
                          root, i, rbuf[i], fold(0, n, i));
        }

        MPI_OK(MPI_Allreduce(s, rbuf, cnt, MPI_LONG, aff, MPI_COMM_WORLD));
        for (int i = 0; i < cnt; i++)
            CHECK(rbuf[i] == fold(0, n, i), "Allreduce cnt %d [%d]", cnt, i);

        /* In place. */
        for (int i = 0; i < cnt; i++)
            rbuf[i] = s[i];
        MPI_OK(MPI_Allreduce(MPI_IN_PLACE, rbuf, cnt, MPI_LONG, aff,
                             MPI_COMM_WORLD));
        for (int i = 0; i < cnt; i++)
            CHECK(rbuf[i] == fold(0, n, i), "Allreduce in place cnt %d [%d]",
                  cnt, i);

        MPI_OK(MPI_Scan(s, rbuf, cnt, MPI_LONG, aff, MPI_COMM_WORLD));
        for (int i = 0; i < cnt; i++)
            CHECK(rbuf[i] == fold(0, me + 1, i), "Scan cnt %d [%d]", cnt, i);

        for (int i = 0; i < cnt; i++)
            rbuf[i] = 12345;
        MPI_OK(MPI_Exscan(s, rbuf, cnt, MPI_LONG, aff, MPI_COMM_WORLD));
        for (int i = 0; i < cnt; i++) {
            if (me == 0)
                CHECK(rbuf[i] == 12345, "Exscan rank 0 buffer changed");
            else
                CHECK(rbuf[i] == fold(0, me, i), "Exscan cnt %d [%d]", cnt, i);
        }

        /* Nonblocking forms, two outstanding at once. */
        long *r2 = malloc(sizeof(long) * cnt);
        MPI_Request rq[2];
        MPI_OK(MPI_Iallreduce(s, rbuf, cnt, MPI_LONG, aff, MPI_COMM_WORLD, &rq[0]));
        MPI_OK(MPI_Iscan(s, r2, cnt, MPI_LONG, aff, MPI_COMM_WORLD, &rq[1]));
        MPI_OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
        for (int i = 0; i < cnt; i++) {
            CHECK(rbuf[i] == fold(0, n, i), "Iallreduce cnt %d [%d]", cnt, i);
            CHECK(r2[i] == fold(0, me + 1, i), "Iscan cnt %d [%d]", cnt, i);
        }
        int root = n - 1;
        MPI_OK(MPI_Ireduce(s, rbuf, cnt, MPI_LONG, aff, root, MPI_COMM_WORLD, &rq[0]));
        MPI_OK(MPI_Iexscan(s, r2, cnt, MPI_LONG, aff, MPI_COMM_WORLD, &rq[1]));
        MPI_OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
        for (int i = 0; i < cnt; i++) {
            if (me == root)
                CHECK(rbuf[i] == fold(0, n, i), "Ireduce cnt %d [%d]", cnt, i);
            if (me > 0)
                CHECK(r2[i] == fold(0, me, i), "Iexscan cnt %d [%d]", cnt, i);
        }
        free(r2);

        /* Reduce_scatter_block: block b of every rank's vector. */
        long *sv = malloc(sizeof(long) * cnt * n);
        for (int b = 0; b < n; b++)
            for (int i = 0; i < cnt; i++)
                sv[b * cnt + i] = contrib(me, b * cnt + i);
        MPI_OK(MPI_Reduce_scatter_block(sv, rbuf, cnt, MPI_LONG, aff,
                                        MPI_COMM_WORLD));
        for (int i = 0; i < cnt; i++)
            CHECK(rbuf[i] == fold(0, n, me * cnt + i),
                  "Reduce_scatter_block cnt %d [%d]", cnt, i);
        MPI_OK(MPI_Ireduce_scatter_block(sv, rbuf, cnt, MPI_LONG, aff,
                                         MPI_COMM_WORLD, &rq[0]));
        MPI_OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
        for (int i = 0; i < cnt; i++)
            CHECK(rbuf[i] == fold(0, n, me * cnt + i),
                  "Ireduce_scatter_block cnt %d [%d]", cnt, i);

        /* Reduce_scatter with uneven counts: rank b gets b % 3 + cnt elements. */
        int *rc = malloc(sizeof(int) * n);
        int tot = 0;
        for (int b = 0; b < n; b++) {
            rc[b] = b % 3 + (cnt > 7 ? 7 : cnt);
            tot += rc[b];
        }
        long *sw = malloc(sizeof(long) * tot);
        long *rw = malloc(sizeof(long) * rc[me]);
        for (int i = 0; i < tot; i++)
            sw[i] = contrib(me, i);
        int off = 0;
        for (int b = 0; b < me; b++)
            off += rc[b];
        MPI_OK(MPI_Reduce_scatter(sw, rw, rc, MPI_LONG, aff, MPI_COMM_WORLD));
        for (int i = 0; i < rc[me]; i++)
            CHECK(rw[i] == fold(0, n, off + i), "Reduce_scatter cnt %d [%d]",
                  cnt, i);
        free(rc);
        free(sw);
        free(rw);
        free(sv);
        free(s);
        free(rbuf);
    }
    CHECK(calls_bad_type == 0, "user function saw a datatype other than MPI_LONG");

    /* Commutative user op on ints against a local computation. */
    {
        int cnt = 9, s[9], r[9];
        for (int i = 0; i < cnt; i++)
            s[i] = ival(me, i);
        for (int root = 0; root < n; root++) {
            MPI_OK(MPI_Reduce(s, r, cnt, MPI_INT, amax, root, MPI_COMM_WORLD));
            if (me == root)
                for (int i = 0; i < cnt; i++) {
                    int want = absmax_want(n, i);
                    CHECK(r[i] == want, "absmax Reduce root %d [%d]: %d want %d",
                          root, i, r[i], want);
                }
        }
        MPI_OK(MPI_Allreduce(s, r, cnt, MPI_INT, amax, MPI_COMM_WORLD));
        for (int i = 0; i < cnt; i++) {
            int want = absmax_want(n, i);
            CHECK(r[i] == want, "absmax Allreduce [%d]", i);
        }
    }

    /* Reduce_local: user and predefined ops. */
    {
        long a[4], b[4];
        for (int i = 0; i < 4; i++) {
            a[i] = contrib(1, i);
            b[i] = contrib(2, i);
        }
        MPI_OK(MPI_Reduce_local(a, b, 4, MPI_LONG, aff));
        for (int i = 0; i < 4; i++)
            CHECK(b[i] == compose(contrib(1, i), contrib(2, i)),
                  "Reduce_local affine [%d]", i);
        int x[3] = {1, -5, 7}, y[3] = {2, 3, -9};
        MPI_OK(MPI_Reduce_local(x, y, 3, MPI_INT, MPI_SUM));
        CHECK(y[0] == 3 && y[1] == -2 && y[2] == -2, "Reduce_local SUM");
        double dx[2] = {1.5, -2.0}, dy[2] = {0.5, 4.0};
        MPI_OK(MPI_Reduce_local(dx, dy, 2, MPI_DOUBLE, MPI_MAX));
        CHECK(dy[0] == 1.5 && dy[1] == 4.0, "Reduce_local MAX double");
        struct { double v; int i; } lx[2] = {{1.0, 3}, {5.0, 1}}, ly[2] = {{1.0, 2}, {4.0, 0}};
        MPI_OK(MPI_Reduce_local(lx, ly, 2, MPI_DOUBLE_INT, MPI_MAXLOC));
        CHECK(ly[0].v == 1.0 && ly[0].i == 2, "Reduce_local MAXLOC tie");
        CHECK(ly[1].v == 5.0 && ly[1].i == 1, "Reduce_local MAXLOC");
        MPI_OK(MPI_Reduce_local(x, y, 0, MPI_INT, amax));
    }

    /* MINLOC/MAXLOC on every pair type through Allreduce. */
    {
        struct { float v; int i; } f[1] = {{(float)((me * 5) % 3), me}}, fr[1];
        struct { long v; int i; } l[1] = {{(me * 5) % 3, me}}, lr[1];
        struct { short v; int i; } s[1] = {{(short)((me * 5) % 3), me}}, sr[1];
        struct { int v; int i; } t[1] = {{(me * 5) % 3, me}}, tr[1];
        int wmax = -1, wmaxi = -1, wmin = 99, wmini = -1;
        for (int q = 0; q < n; q++) {
            int v = (q * 5) % 3;
            if (v > wmax) { wmax = v; wmaxi = q; }
            if (v < wmin) { wmin = v; wmini = q; }
        }
        MPI_OK(MPI_Allreduce(f, fr, 1, MPI_FLOAT_INT, MPI_MAXLOC, MPI_COMM_WORLD));
        CHECK(fr[0].v == wmax && fr[0].i == wmaxi, "FLOAT_INT MAXLOC");
        MPI_OK(MPI_Allreduce(l, lr, 1, MPI_LONG_INT, MPI_MINLOC, MPI_COMM_WORLD));
        CHECK(lr[0].v == wmin && lr[0].i == wmini, "LONG_INT MINLOC");
        MPI_OK(MPI_Allreduce(s, sr, 1, MPI_SHORT_INT, MPI_MAXLOC, MPI_COMM_WORLD));
        CHECK(sr[0].v == wmax && sr[0].i == wmaxi, "SHORT_INT MAXLOC");
        MPI_OK(MPI_Allreduce(t, tr, 1, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD));
        CHECK(tr[0].v == wmin && tr[0].i == wmini, "2INT MINLOC");
    }

    /* Errors: freeing a predefined op; a freed op is invalid. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    {
        MPI_Op o = MPI_SUM;
        int rc = MPI_Op_free(&o);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_OP, "Op_free(MPI_SUM) gave class %d", cls);
    }
    MPI_Op gone = amax;
    MPI_OK(MPI_Op_free(&amax));
    CHECK(amax == MPI_OP_NULL, "Op_free did not set MPI_OP_NULL");
    if (!lt_running_on_mpich()) { /* MPICH may reuse a freed handle's object */
        int x = 1, y = 0, cls = -1;
        int rc = MPI_Allreduce(&x, &y, 1, MPI_INT, gone, MPI_COMM_WORLD);
        MPI_Error_class(rc, &cls);
        CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_OP,
              "Allreduce with a freed op gave class %d", cls);
    }
    MPI_OK(MPI_Op_free(&aff));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    return lt_finish();
}
