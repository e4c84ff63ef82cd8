/*
 * Communication with derived datatypes: vector, indexed, struct, subarray
 * and resized types sent and received blocking and nonblocking around a
 * ring (so across emulated nodes too), a medium vector (eager, which
 * over TCP lands in place from 16 KiB) received before and after it
 * arrives, a large vector (rendezvous), and blocking collectives. Every received byte is checked against a locally
 * computed expectation, and bytes in the holes must stay untouched.
 */
#include "lt.h"
#include <stddef.h>

#define N 6      /* matrix is N x N doubles */
#define SENT -7.5 /* sentinel in untouched cells */

struct rec {
    char c;
    double d;
    int i[2];
};

static double val(int rank, int r, int c) { return rank * 1000 + r * 10 + c; }

static void fill(double m[N][N], int rank)
{
    int r, c;
    for (r = 0; r < N; r++)
        for (c = 0; c < N; c++)
            m[r][c] = val(rank, r, c);
}

static void clear(double m[N][N])
{
    int r, c;
    for (r = 0; r < N; r++)
        for (c = 0; c < N; c++)
            m[r][c] = SENT;
}

/* Column `col` of the sender's matrix lands in column `into`. */
static void check_column(double m[N][N], int from, int col, int into, const char *what)
{
    int r, c;
    for (r = 0; r < N; r++)
        for (c = 0; c < N; c++) {
            double want = c == into ? val(from, r, col) : SENT;
            CHECK(m[r][c] == want, "%s: m[%d][%d] = %g, want %g", what, r, c, m[r][c], want);
        }
}

static void columns(void)
{
    MPI_Datatype col;
    double a[N][N], b[N][N];
    MPI_Status st;
    MPI_Request rq[2];
    int n, flag = 0;
    int next = lt_next(), prev = lt_prev();

    MPI_OK(MPI_Type_vector(N, 1, N, MPI_DOUBLE, &col));
    MPI_OK(MPI_Type_commit(&col));
    fill(a, lt_rank);

    /* blocking: column 2 -> column 4 */
    clear(b);
    MPI_OK(MPI_Sendrecv(&a[0][2], 1, col, next, 1, &b[0][4], 1, col, prev, 1, MPI_COMM_WORLD,
                        &st));
    check_column(b, prev, 2, 4, "Sendrecv column");
    MPI_OK(MPI_Get_count(&st, col, &n));
    CHECK(n == 1, "Get_count(col) = %d", n);
    MPI_OK(MPI_Get_count(&st, MPI_DOUBLE, &n));
    CHECK(n == N, "Get_count(double) = %d", n);
    MPI_OK(MPI_Get_elements(&st, col, &n));
    CHECK(n == N, "Get_elements(col) = %d", n);

    /* nonblocking: column 1 -> column 0, received with Test polling */
    clear(b);
    MPI_OK(MPI_Irecv(&b[0][0], 1, col, prev, 2, MPI_COMM_WORLD, &rq[0]));
    MPI_OK(MPI_Isend(&a[0][1], 1, col, next, 2, MPI_COMM_WORLD, &rq[1]));
    while (!flag)
        MPI_OK(MPI_Test(&rq[0], &flag, &st));
    MPI_OK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
    check_column(b, prev, 1, 0, "Irecv column");

    /* vector sent, received as contiguous doubles (same signature) */
    {
        double flat[N + 1];
        int i;
        for (i = 0; i <= N; i++)
            flat[i] = SENT;
        MPI_OK(MPI_Sendrecv(&a[0][5], 1, col, next, 3, flat, N, MPI_DOUBLE, prev, 3,
                            MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (i = 0; i < N; i++)
            CHECK(flat[i] == val(prev, i, 5), "flat[%d] = %g", i, flat[i]);
        CHECK(flat[N] == SENT, "flat[N] overwritten");
    }

    /* Sendrecv_replace in a column */
    fill(b, lt_rank);
    MPI_OK(MPI_Sendrecv_replace(&b[0][3], 1, col, next, 4, prev, 4, MPI_COMM_WORLD,
                                MPI_STATUS_IGNORE));
    {
        int r, c;
        for (r = 0; r < N; r++)
            for (c = 0; c < N; c++) {
                double want = c == 3 ? val(prev, r, 3) : val(lt_rank, r, c);
                CHECK(b[r][c] == want, "replace b[%d][%d] = %g", r, c, b[r][c]);
            }
    }

    /* resized column: count 3 consecutive columns in one message */
    {
        MPI_Datatype rcol;
        int r, c;
        MPI_OK(MPI_Type_create_resized(col, 0, sizeof(double), &rcol));
        MPI_OK(MPI_Type_commit(&rcol));
        clear(b);
        MPI_OK(MPI_Sendrecv(&a[0][0], 3, rcol, next, 5, &b[0][2], 3, rcol, prev, 5,
                            MPI_COMM_WORLD, &st));
        for (r = 0; r < N; r++)
            for (c = 0; c < N; c++) {
                double want = (c >= 2 && c < 5) ? val(prev, r, c - 2) : SENT;
                CHECK(b[r][c] == want, "resized b[%d][%d] = %g", r, c, b[r][c]);
            }
        MPI_OK(MPI_Get_count(&st, rcol, &n));
        CHECK(n == 3, "Get_count(rcol) = %d", n);
        MPI_OK(MPI_Type_free(&rcol));
    }
    MPI_OK(MPI_Type_free(&col));
}

static void structs(void)
{
    struct rec s[3], r[3];
    MPI_Datatype st;
    int bl[3] = {1, 1, 2}, i, k;
    MPI_Aint dl[3] = {offsetof(struct rec, c), offsetof(struct rec, d), offsetof(struct rec, i)};
    MPI_Datatype tl[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT};
    MPI_Request rq[2];

    MPI_OK(MPI_Type_create_struct(3, bl, dl, tl, &st));
    MPI_OK(MPI_Type_commit(&st));
    memset(s, 0, sizeof s);
    for (i = 0; i < 3; i++) {
        s[i].c = (char)('a' + lt_rank + i);
        s[i].d = lt_rank + i * 0.25;
        s[i].i[0] = lt_rank * 100 + i;
        s[i].i[1] = -i;
    }
    memset(r, 0xEE, sizeof r);
    MPI_OK(MPI_Irecv(r, 3, st, lt_prev(), 6, MPI_COMM_WORLD, &rq[0]));
    MPI_OK(MPI_Isend(s, 3, st, lt_next(), 6, MPI_COMM_WORLD, &rq[1]));
    MPI_OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    for (i = 0; i < 3; i++) {
        int p = lt_prev();
        unsigned char *raw = (unsigned char *)&r[i];
        CHECK(r[i].c == (char)('a' + p + i) && r[i].d == p + i * 0.25 &&
                  r[i].i[0] == p * 100 + i && r[i].i[1] == -i,
              "struct %d fields wrong", i);
        /* padding between c and d must stay untouched */
        for (k = 1; k < (int)offsetof(struct rec, d); k++)
            CHECK(raw[k] == 0xEE, "struct %d hole byte %d written (%02x)", i, k, raw[k]);
    }
    MPI_OK(MPI_Type_free(&st));
}

static void subarrays(void)
{
    int sizes[2] = {4, 6}, subs[2] = {2, 3}, starts[2] = {1, 2};
    int a[4][6], b[4][6], r, c;
    MPI_Datatype sub;
    MPI_Request rq;

    MPI_OK(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &sub));
    MPI_OK(MPI_Type_commit(&sub));
    for (r = 0; r < 4; r++)
        for (c = 0; c < 6; c++) {
            a[r][c] = lt_rank * 100 + r * 6 + c;
            b[r][c] = -1;
        }
    MPI_OK(MPI_Irecv(b, 1, sub, lt_prev(), 7, MPI_COMM_WORLD, &rq));
    MPI_OK(MPI_Send(a, 1, sub, lt_next(), 7, MPI_COMM_WORLD));
    MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (r = 0; r < 4; r++)
        for (c = 0; c < 6; c++) {
            int in = r >= 1 && r < 3 && c >= 2 && c < 5;
            int want = in ? lt_prev() * 100 + r * 6 + c : -1;
            CHECK(b[r][c] == want, "subarray b[%d][%d] = %d, want %d", r, c, b[r][c], want);
        }
    MPI_OK(MPI_Type_free(&sub));
}

/* Every other double of a long array: well past any eager limit. */
static void medium(void)
{
    enum { M = 5000 }; /* 40000 bytes */
    double *a = malloc(M * sizeof(double)), *b = malloc(2 * M * sizeof(double));
    MPI_Datatype ev;
    MPI_Request rq;
    long i, bad;

    MPI_OK(MPI_Type_vector(M, 1, 2, MPI_DOUBLE, &ev));
    MPI_OK(MPI_Type_commit(&ev));
    for (int late = 0; late < 2; late++) {
        for (i = 0; i < M; i++)
            a[i] = lt_rank * 1e6 + late * 1e5 + i;
        for (i = 0; i < 2 * M; i++)
            b[i] = SENT;
        if (!late) {
            /* Posted first: the message lands in the layout as it comes. */
            MPI_OK(MPI_Irecv(b + 1, 1, ev, lt_prev(), 9, MPI_COMM_WORLD, &rq));
            MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
            MPI_OK(MPI_Ssend(a, M, MPI_DOUBLE, lt_next(), 9, MPI_COMM_WORLD));
            MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        } else {
            /* Arrived first: held whole until the receive. */
            MPI_OK(MPI_Isend(a, M, MPI_DOUBLE, lt_next(), 10, MPI_COMM_WORLD, &rq));
            MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
            lt_sleep_ms(20);
            MPI_OK(MPI_Recv(b + 1, 1, ev, lt_prev(), 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        }
        bad = 0;
        for (i = 0; i < 2 * M; i++) {
            double want = (i % 2) ? lt_prev() * 1e6 + late * 1e5 + (i - 1) / 2 : SENT;
            if (b[i] != want)
                bad++;
        }
        CHECK(bad == 0, "medium vector received %s: %ld wrong doubles",
              late ? "after it arrived" : "before", bad);
    }
    MPI_OK(MPI_Type_free(&ev));
    free(a);
    free(b);
}

static void large(void)
{
    enum { M = 200000 };
    double *a = malloc(2 * M * sizeof(double)), *b = malloc(2 * M * sizeof(double));
    MPI_Datatype ev;
    MPI_Request rq[2];
    long i, bad = 0;

    MPI_OK(MPI_Type_vector(M, 1, 2, MPI_DOUBLE, &ev));
    MPI_OK(MPI_Type_commit(&ev));
    for (i = 0; i < 2 * M; i++) {
        a[i] = lt_rank * 1e7 + i;
        b[i] = SENT;
    }
    MPI_OK(MPI_Irecv(b + 1, 1, ev, lt_prev(), 8, MPI_COMM_WORLD, &rq[0]));
    MPI_OK(MPI_Isend(a, 1, ev, lt_next(), 8, MPI_COMM_WORLD, &rq[1]));
    MPI_OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    for (i = 0; i < 2 * M; i++) {
        double want = (i % 2) ? lt_prev() * 1e7 + (i - 1) : SENT;
        if (b[i] != want)
            bad++;
    }
    CHECK(bad == 0, "large vector: %ld wrong doubles", bad);
    MPI_OK(MPI_Type_free(&ev));
    free(a);
    free(b);
}

static void collectives(void)
{
    MPI_Datatype pair, rpair;
    int i, k, n = lt_size;
    int *src = malloc(sizeof(int) * 4 * n), *dst = malloc(sizeof(int) * 4 * n);

    /* two ints with a one-int hole, resized so instances are 3 ints apart */
    MPI_OK(MPI_Type_vector(2, 1, 2, MPI_INT, &pair));
    MPI_OK(MPI_Type_commit(&pair));
    MPI_OK(MPI_Type_create_resized(pair, 0, 4 * sizeof(int), &rpair));
    MPI_OK(MPI_Type_commit(&rpair));

    /* Bcast */
    for (i = 0; i < 4; i++)
        src[i] = lt_rank == 1 % n ? 50 + i : -1;
    MPI_OK(MPI_Bcast(src, 1, pair, 1 % n, MPI_COMM_WORLD));
    CHECK(src[0] == 50 && src[1] == (lt_rank == 1 % n ? 51 : -1) && src[2] == 52 &&
              src[3] == (lt_rank == 1 % n ? 53 : -1),
          "Bcast pair %d %d %d %d", src[0], src[1], src[2], src[3]);

    /* Gather: each rank's pair lands in slot rank of the root's buffer */
    for (i = 0; i < 4 * n; i++) {
        src[i] = lt_rank * 10 + i;
        dst[i] = -1;
    }
    MPI_OK(MPI_Gather(src, 1, pair, dst, 1, rpair, 0, MPI_COMM_WORLD));
    if (lt_rank == 0)
        for (k = 0; k < n; k++)
            for (i = 0; i < 4; i++) {
                int want = i == 0 ? k * 10 : i == 2 ? k * 10 + 2 : -1;
                CHECK(dst[4 * k + i] == want, "Gather dst[%d] = %d, want %d", 4 * k + i,
                      dst[4 * k + i], want);
            }

    /* Scatter back: root's slot k (2 ints) to rank k's pair */
    for (i = 0; i < 4 * n; i++) {
        src[i] = 1000 + i;
        dst[i] = -1;
    }
    MPI_OK(MPI_Scatter(src, 1, rpair, dst, 2, MPI_INT, 0, MPI_COMM_WORLD));
    CHECK(dst[0] == 1000 + 4 * lt_rank && dst[1] == 1002 + 4 * lt_rank && dst[2] == -1,
          "Scatter %d %d %d", dst[0], dst[1], dst[2]);

    /* Allgather */
    for (i = 0; i < 4 * n; i++) {
        src[i] = lt_rank * 10 + i;
        dst[i] = -1;
    }
    MPI_OK(MPI_Allgather(src, 1, pair, dst, 1, rpair, MPI_COMM_WORLD));
    for (k = 0; k < n; k++)
        for (i = 0; i < 4; i++) {
            int want = i == 0 ? k * 10 : i == 2 ? k * 10 + 2 : -1;
            CHECK(dst[4 * k + i] == want, "Allgather dst[%d] = %d", 4 * k + i, dst[4 * k + i]);
        }

    /* Alltoall: block k of my send buffer goes to rank k */
    for (i = 0; i < 4 * n; i++) {
        src[i] = lt_rank * 1000 + i;
        dst[i] = -1;
    }
    MPI_OK(MPI_Alltoall(src, 1, rpair, dst, 1, rpair, MPI_COMM_WORLD));
    for (k = 0; k < n; k++)
        for (i = 0; i < 4; i++) {
            int want = i == 0 ? k * 1000 + 4 * lt_rank : i == 2 ? k * 1000 + 4 * lt_rank + 2 : -1;
            CHECK(dst[4 * k + i] == want, "Alltoall dst[%d] = %d, want %d", 4 * k + i,
                  dst[4 * k + i], want);
        }

    /* Allreduce and Reduce on the pair (sum), holes untouched. The
     * standard defines predefined operations on predefined types only;
     * Lanai also reduces derived types made of one basic type, MPICH
     * refuses them, so this part runs on Lanai only. */
    if (!lt_running_on_mpich()) {
        int s = n * (n - 1) / 2;
        for (i = 0; i < 4; i++) {
            src[i] = lt_rank + i;
            dst[i] = -1;
        }
        MPI_OK(MPI_Allreduce(src, dst, 1, pair, MPI_SUM, MPI_COMM_WORLD));
        CHECK(dst[0] == s && dst[1] == -1 && dst[2] == s + 2 * n && dst[3] == -1,
              "Allreduce %d %d %d %d", dst[0], dst[1], dst[2], dst[3]);
        for (i = 0; i < 4; i++)
            dst[i] = -1;
        MPI_OK(MPI_Reduce(src, dst, 1, pair, MPI_SUM, n - 1, MPI_COMM_WORLD));
        if (lt_rank == n - 1)
            CHECK(dst[0] == s && dst[1] == -1 && dst[2] == s + 2 * n && dst[3] == -1,
                  "Reduce %d %d %d %d", dst[0], dst[1], dst[2], dst[3]);
    }

    MPI_OK(MPI_Type_free(&pair));
    MPI_OK(MPI_Type_free(&rpair));
    free(src);
    free(dst);
}

int main(int argc, char **argv)
{
    lt_init("datatype_comm", &argc, &argv);
    columns();
    structs();
    subarrays();
    medium();
    large();
    collectives();
    return lt_finish();
}
