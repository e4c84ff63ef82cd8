/* Small collectives, the sizes a node serves from shared memory (the
 * device's data slots and mailboxes): every size from 1 byte to past each
 * threshold, roots that rotate, nonblocking calls several in flight,
 * in-place forms, a split communicator, ranks that run ahead of a slow
 * one, gatherv and scatterv with blocks on both sides of the mailbox
 * slot's size, and a non-commutative user operation whose order is checked.
 * Every result is compared with values computed here independently.
 * Each rank prints "digest <rank> <hex>": a hash of its floating-point
 * results, so a run under LANAI_NODE_COLL=messages can be compared bit
 * for bit.
 * With a second argument, it ends with that many gathers of 104 bytes to
 * rank 0 in a tight loop, after the verdict and right before
 * MPI_Finalize: the root then owes the others answers about the messages
 * they lent it, and every rank must still get out of MPI_Finalize. (The
 * verdict's messages would drain those answers, so they come first.)
 * usage: coll_small [rounds] [gathers] */
#include "lt.h"

static unsigned long long digest = 1469598103934665603ULL;
static void mix(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        digest = (digest ^ b[i]) * 1099511628211ULL;
}

static unsigned char byte_of(int rank, int i, int round) { return (unsigned char)(rank * 31 + i * 7 + round * 3 + 1); }
static double dval(int rank, int i, int round) { return 1.0 / (3 + rank) + i * 0.1 + round * 1e-3; }

/* A 2x2 integer matrix product: associative, not commutative. */
typedef struct { long a, b, c, d; } mat;
static mat mat_of(int rank, int i) { mat m = {1, rank + i % 3, (rank * 7 + i) % 5, 1}; return m; }
static mat mat_mul(mat x, mat y)
{
    mat r = {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
    r.a %= 1000003; r.b %= 1000003; r.c %= 1000003; r.d %= 1000003;
    return r;
}
static void mat_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    mat *x = in, *y = inout;
    for (int i = 0; i < *len; i++)
        y[i] = mat_mul(x[i], y[i]);
}

static void bytes_rooted(MPI_Comm comm, int round, int len)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int root = round % size;
    unsigned char *buf = malloc(len * size + 1), *all = malloc(len * size + 1);
    /* Bcast. */
    for (int i = 0; i < len; i++)
        buf[i] = rank == root ? byte_of(root, i, round) : 0;
    MPI_OK(MPI_Bcast(buf, len, MPI_BYTE, root, comm));
    for (int i = 0; i < len; i++)
        CHECK(buf[i] == byte_of(root, i, round), "bcast len %d root %d [%d]: %d", len, root, i, buf[i]);
    /* Gather, then scatter the gathered vector back. */
    for (int i = 0; i < len; i++)
        buf[i] = byte_of(rank, i, round);
    memset(all, 0, len * size);
    MPI_OK(MPI_Gather(buf, len, MPI_BYTE, all, len, MPI_BYTE, root, comm));
    if (rank == root)
        for (int r = 0; r < size; r++)
            for (int i = 0; i < len; i++)
                CHECK(all[r * len + i] == byte_of(r, i, round), "gather len %d from %d [%d]", len, r, i);
    memset(buf, 0, len);
    MPI_OK(MPI_Scatter(all, len, MPI_BYTE, buf, len, MPI_BYTE, root, comm));
    for (int i = 0; i < len; i++)
        CHECK(buf[i] == byte_of(rank, i, round), "scatter len %d [%d]: %d", len, i, buf[i]);
    /* In place at the root. */
    if (rank == root) {
        for (int i = 0; i < len; i++)
            all[root * len + i] = byte_of(root, i, round + 1);
        MPI_OK(MPI_Gather(MPI_IN_PLACE, len, MPI_BYTE, all, len, MPI_BYTE, root, comm));
    } else {
        for (int i = 0; i < len; i++)
            buf[i] = byte_of(rank, i, round + 1);
        MPI_OK(MPI_Gather(buf, len, MPI_BYTE, NULL, 0, MPI_BYTE, root, comm));
    }
    if (rank == root)
        for (int r = 0; r < size; r++)
            for (int i = 0; i < len; i++)
                CHECK(all[r * len + i] == byte_of(r, i, round + 1), "in-place gather len %d from %d", len, r);
    if (rank == root)
        MPI_OK(MPI_Scatter(all, len, MPI_BYTE, MPI_IN_PLACE, len, MPI_BYTE, root, comm));
    else
        MPI_OK(MPI_Scatter(NULL, 0, MPI_BYTE, buf, len, MPI_BYTE, root, comm));
    if (rank != root)
        for (int i = 0; i < len; i++)
            CHECK(buf[i] == byte_of(rank, i, round + 1), "in-place scatter len %d [%d]", len, i);
    free(buf);
    free(all);
}

static void bytes_all(MPI_Comm comm, int round, int len)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    unsigned char *mine = malloc(len * size + 1), *all = malloc(len * size + 1);
    for (int i = 0; i < len; i++)
        mine[i] = byte_of(rank, i, round);
    MPI_OK(MPI_Allgather(mine, len, MPI_BYTE, all, len, MPI_BYTE, comm));
    for (int r = 0; r < size; r++)
        for (int i = 0; i < len; i++)
            CHECK(all[r * len + i] == byte_of(r, i, round), "allgather len %d from %d [%d]", len, r, i);
    /* Allgatherv: rank r gives len - r % 2 bytes (at least 1), in reverse order. */
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    int at = 0;
    for (int r = size - 1; r >= 0; r--) {
        counts[r] = len > 1 ? len - r % 2 : 1;
        displs[r] = at;
        at += counts[r];
    }
    unsigned char *v = malloc(at + 1);
    memset(v, 0, at);
    MPI_OK(MPI_Allgatherv(mine, counts[rank], MPI_BYTE, v, counts, displs, MPI_BYTE, comm));
    for (int r = 0; r < size; r++)
        for (int i = 0; i < counts[r]; i++)
            CHECK(v[displs[r] + i] == byte_of(r, i, round), "allgatherv len %d from %d [%d]", len, r, i);
    /* Alltoall: block `d` of rank r's vector is meant for d. */
    for (int d = 0; d < size; d++)
        for (int i = 0; i < len; i++)
            mine[d * len + i] = byte_of(rank * size + d, i, round);
    MPI_OK(MPI_Alltoall(mine, len, MPI_BYTE, all, len, MPI_BYTE, comm));
    for (int r = 0; r < size; r++)
        for (int i = 0; i < len; i++)
            CHECK(all[r * len + i] == byte_of(r * size + rank, i, round), "alltoall len %d from %d [%d]", len, r, i);
    free(v);
    free(counts);
    free(displs);
    free(mine);
    free(all);
}

static void reductions(MPI_Comm comm, int round, int n, MPI_Op matop)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    /* Reduce_scatter_block of doubles: block b of every rank's vector. */
    double *v = malloc(sizeof(double) * n * size), *got = malloc(sizeof(double) * n);
    for (int b = 0; b < size; b++)
        for (int i = 0; i < n; i++)
            v[b * n + i] = dval(rank, b * n + i, round);
    MPI_OK(MPI_Reduce_scatter_block(v, got, n, MPI_DOUBLE, MPI_SUM, comm));
    for (int i = 0; i < n; i++) {
        double want = 0;
        for (int r = 0; r < size; r++)
            want += dval(r, rank * n + i, round);
        CHECK(got[i] > want - 1e-9 && got[i] < want + 1e-9, "reduce_scatter_block n %d [%d]: %g, want %g", n, i, got[i], want);
    }
    mix(got, sizeof(double) * n);
    /* Reduce_scatter with counts n, n + 1, n, ... of longs. */
    int *counts = malloc(sizeof(int) * size), total = 0;
    for (int r = 0; r < size; r++)
        total += counts[r] = n + r % 2;
    long *lv = malloc(sizeof(long) * total), *lg = malloc(sizeof(long) * (n + 1));
    for (int i = 0; i < total; i++)
        lv[i] = (long)rank * 1000 + i + round;
    MPI_OK(MPI_Reduce_scatter(lv, lg, counts, MPI_LONG, MPI_SUM, comm));
    int first = 0;
    for (int r = 0; r < rank; r++)
        first += counts[r];
    for (int i = 0; i < counts[rank]; i++) {
        long want = 0;
        for (int r = 0; r < size; r++)
            want += (long)r * 1000 + first + i + round;
        CHECK(lg[i] == want, "reduce_scatter n %d [%d]: %ld, want %ld", n, i, lg[i], want);
    }
    /* Scan and exscan of a non-commutative operation: order matters. */
    int m = n < 4 ? n : 4;
    mat *x = malloc(sizeof(mat) * m), *s = malloc(sizeof(mat) * m);
    MPI_Datatype mt;
    MPI_OK(MPI_Type_contiguous(4, MPI_LONG, &mt));
    MPI_OK(MPI_Type_commit(&mt));
    for (int i = 0; i < m; i++)
        x[i] = mat_of(rank, i + round);
    MPI_OK(MPI_Scan(x, s, m, mt, matop, comm));
    for (int i = 0; i < m; i++) {
        mat want = mat_of(0, i + round);
        for (int r = 1; r <= rank; r++)
            want = mat_mul(want, mat_of(r, i + round));
        CHECK(!memcmp(&want, &s[i], sizeof(mat)), "scan n %d [%d] wrong order or value", m, i);
    }
    MPI_OK(MPI_Exscan(x, s, m, mt, matop, comm));
    if (rank > 0)
        for (int i = 0; i < m; i++) {
            mat want = mat_of(0, i + round);
            for (int r = 1; r < rank; r++)
                want = mat_mul(want, mat_of(r, i + round));
            CHECK(!memcmp(&want, &s[i], sizeof(mat)), "exscan n %d [%d]", m, i);
        }
    /* Scan of doubles, for the digest. */
    double *ds = malloc(sizeof(double) * n), *dx = malloc(sizeof(double) * n);
    for (int i = 0; i < n; i++)
        dx[i] = dval(rank, i, round);
    MPI_OK(MPI_Scan(dx, ds, n, MPI_DOUBLE, MPI_SUM, comm));
    mix(ds, sizeof(double) * n);
    MPI_OK(MPI_Type_free(&mt));
    free(v); free(got); free(counts); free(lv); free(lg); free(x); free(s); free(ds); free(dx);
}

/* Several nonblocking calls in flight at once, completed in reverse. */
static void in_flight(MPI_Comm comm, int round)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    enum { K = 6, LEN = 8 };
    MPI_Request req[4 * K];
    unsigned char b[K][LEN], g[K][LEN * 16], a[K][LEN * 16], s[K][LEN];
    long sc[K], scin[K];
    int nr = 0;
    for (int k = 0; k < K; k++) {
        int root = (round + k) % size;
        for (int i = 0; i < LEN; i++)
            b[k][i] = rank == root ? byte_of(root, i, round + k) : 0;
        MPI_OK(MPI_Ibcast(b[k], LEN, MPI_BYTE, root, comm, &req[nr++]));
        for (int i = 0; i < LEN; i++)
            s[k][i] = byte_of(rank, i, round + k);
        MPI_OK(MPI_Igather(s[k], LEN, MPI_BYTE, g[k], LEN, MPI_BYTE, root, comm, &req[nr++]));
        MPI_OK(MPI_Iallgather(s[k], LEN, MPI_BYTE, a[k], LEN, MPI_BYTE, comm, &req[nr++]));
        scin[k] = rank + k;
        MPI_OK(MPI_Iscan(&scin[k], &sc[k], 1, MPI_LONG, MPI_SUM, comm, &req[nr++]));
    }
    for (int i = nr - 1; i >= 0; i--)
        MPI_OK(MPI_Wait(&req[i], MPI_STATUS_IGNORE));
    for (int k = 0; k < K; k++) {
        int root = (round + k) % size;
        for (int i = 0; i < LEN; i++)
            CHECK(b[k][i] == byte_of(root, i, round + k), "ibcast %d [%d]", k, i);
        for (int r = 0; r < size; r++)
            for (int i = 0; i < LEN; i++) {
                if (rank == root)
                    CHECK(g[k][r * LEN + i] == byte_of(r, i, round + k), "igather %d from %d", k, r);
                CHECK(a[k][r * LEN + i] == byte_of(r, i, round + k), "iallgather %d from %d", k, r);
            }
        CHECK(sc[k] == (long)rank * (rank + 1) / 2 + (long)(rank + 1) * k, "iscan %d: %ld", k, sc[k]);
    }
}

/* Gatherv and scatterv: member p's block is v_len(p, c) bytes, from empty
 * through the mailbox slot's 56 bytes and three slots' 168 in pieces to a
 * transfer's, laid out in reverse rank order with 3-byte gaps that must
 * stay 0xee; in place at the
 * root every other call; then K of each in flight to different roots,
 * completed in reverse; then more calls in a row than a rank has mailbox
 * slots, with the root's block small and the others' too. */
static int v_len(int p, int c)
{
    static const int lens[] = {0, 1, 7, 55, 56, 57, 300, 70000, 24, 8, 112, 113, 168, 169};
    return lens[(p * 3 + c) % 14];
}

static long v_layout(MPI_Comm comm, int c, int *cnt, int *dis, int small)
{
    int size;
    MPI_Comm_size(comm, &size);
    long at = 3;
    for (int p = size - 1; p >= 0; p--) {
        cnt[p] = small ? v_len(p, c) % 169 : v_len(p, c);
        dis[p] = (int)at;
        at += cnt[p] + 3;
    }
    return at;
}

static void v_check_all(const unsigned char *all, int size, const int *cnt, const int *dis, long ext,
                        int c, const char *what)
{
    unsigned char *want = malloc(ext);
    memset(want, 0xee, ext);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < cnt[p]; i++)
            want[dis[p] + i] = byte_of(p, i, c);
    long bad = -1;
    for (long i = 0; i < ext && bad < 0; i++)
        if (all[i] != want[i])
            bad = i;
    CHECK(bad < 0, "%s call %d: byte %ld is %d, want %d", what, c, bad, bad < 0 ? 0 : all[bad],
          bad < 0 ? 0 : want[bad]);
    free(want);
}

static void v_check_mine(const unsigned char *b, int rank, int n, int c, const char *what)
{
    for (int i = 0; i < n; i++)
        CHECK(b[i] == byte_of(rank, i, c), "%s call %d [%d]: %d", what, c, i, b[i]);
    CHECK(b[n] == 0xee, "%s call %d wrote past its %d bytes", what, c, n);
}

static void small_v(MPI_Comm comm, int round)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *cnt = malloc(sizeof(int) * size), *dis = malloc(sizeof(int) * size);
    for (int k = 0; k < 4; k++) {
        int c = round * 8 + k, root = c % size, ip = k % 2 && rank == root;
        long ext = v_layout(comm, c, cnt, dis, 0);
        unsigned char *one = malloc(cnt[rank] + 1), *all = malloc(ext);
        for (int i = 0; i < cnt[rank]; i++)
            one[i] = byte_of(rank, i, c);
        memset(all, 0xee, ext);
        if (ip)
            memcpy(all + dis[rank], one, cnt[rank]);
        MPI_OK(MPI_Gatherv(ip ? MPI_IN_PLACE : one, cnt[rank], MPI_BYTE, all, cnt, dis, MPI_BYTE, root, comm));
        if (rank == root)
            v_check_all(all, size, cnt, dis, ext, c, ip ? "gatherv in place" : "gatherv");
        memset(one, 0xee, cnt[rank] + 1);
        MPI_OK(MPI_Scatterv(all, cnt, dis, MPI_BYTE, ip ? MPI_IN_PLACE : one, cnt[rank], MPI_BYTE, root, comm));
        if (!ip)
            v_check_mine(one, rank, cnt[rank], c, "scatterv");
        free(one);
        free(all);
    }
    enum { K = 5 };
    MPI_Request req[2 * K];
    unsigned char *one[K], *got[K], *g[K], *s[K];
    long ext[K];
    int *gc[K], *gd[K];
    for (int k = 0; k < K; k++) {
        int c = round * 8 + 4 + k, root = (c * 7) % size;
        gc[k] = malloc(sizeof(int) * size);
        gd[k] = malloc(sizeof(int) * size);
        ext[k] = v_layout(comm, c, gc[k], gd[k], k % 2);
        int n = gc[k][rank];
        one[k] = malloc(n + 1);
        got[k] = malloc(n + 1);
        g[k] = malloc(ext[k]);
        s[k] = malloc(ext[k]);
        for (int i = 0; i < n; i++)
            one[k][i] = byte_of(rank, i, c);
        memset(got[k], 0xee, n + 1);
        memset(g[k], 0xee, ext[k]);
        memset(s[k], 0xee, ext[k]);
        for (int p = 0; p < size; p++)
            for (int i = 0; i < gc[k][p]; i++)
                s[k][gd[k][p] + i] = byte_of(p, i, c);
        MPI_OK(MPI_Igatherv(one[k], n, MPI_BYTE, g[k], gc[k], gd[k], MPI_BYTE, root, comm, &req[2 * k]));
        MPI_OK(MPI_Iscatterv(s[k], gc[k], gd[k], MPI_BYTE, got[k], n, MPI_BYTE, (root + 1) % size, comm,
                             &req[2 * k + 1]));
    }
    for (int i = 2 * K - 1; i >= 0; i--)
        MPI_OK(MPI_Wait(&req[i], MPI_STATUS_IGNORE));
    for (int k = 0; k < K; k++) {
        int c = round * 8 + 4 + k, root = (c * 7) % size;
        if (rank == root)
            v_check_all(g[k], size, gc[k], gd[k], ext[k], c, "igatherv");
        v_check_mine(got[k], rank, gc[k][rank], c, "iscatterv");
        free(one[k]); free(got[k]); free(g[k]); free(s[k]); free(gc[k]); free(gd[k]);
    }
    /* More in a row than a member has slots; members linger now and then. */
    for (int c = 1000 * (round + 1); c < 1000 * (round + 1) + 150; c++) {
        int root = c % size;
        long e = v_layout(comm, c, cnt, dis, 1);
        unsigned char mine[176], back[176], *all = malloc(e);
        for (int i = 0; i < cnt[rank]; i++)
            mine[i] = byte_of(rank, i, c);
        memset(all, 0xee, e);
        MPI_OK(MPI_Gatherv(mine, cnt[rank], MPI_BYTE, all, cnt, dis, MPI_BYTE, root, comm));
        if (rank == root)
            v_check_all(all, size, cnt, dis, e, c, "gatherv in a row");
        memset(back, 0xee, sizeof back);
        MPI_OK(MPI_Scatterv(all, cnt, dis, MPI_BYTE, back, cnt[rank], MPI_BYTE, root, comm));
        v_check_mine(back, rank, cnt[rank], c, "scatterv in a row");
        if (rank != root && c % 37 == 0) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
        free(all);
    }
    free(cnt);
    free(dis);
}

/* Rank 0 runs ahead of the others, who linger between calls, through
 * more broadcasts than a rank has mailbox slots. */
static void run_ahead(MPI_Comm comm, int calls)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    for (int c = 0; c < calls; c++) {
        int v[4];
        for (int i = 0; i < 4; i++)
            v[i] = rank == 0 ? c * 4 + i : -1;
        MPI_OK(MPI_Bcast(v, 4, MPI_INT, 0, comm));
        for (int i = 0; i < 4; i++)
            CHECK(v[i] == c * 4 + i, "run-ahead bcast %d [%d]: %d", c, i, v[i]);
        if (rank != 0 && c % 16 == 0) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
        }
    }
}

/* Gathers of 13 doubles to rank 0, back to back. */
static void gather_loop(int calls)
{
    enum { N = 13 };
    double mine[N], *all = malloc(sizeof(double) * N * lt_size);
    for (int c = 0; c < calls; c++) {
        for (int i = 0; i < N; i++)
            mine[i] = lt_rank * 1e6 + c + i;
        MPI_OK(MPI_Gather(mine, N, MPI_DOUBLE, all, N, MPI_DOUBLE, 0, MPI_COMM_WORLD));
        /* Checked now and then: the root must not fall behind by checking. */
        if (lt_rank == 0 && c % 1000 == 999)
            for (int r = 0; r < lt_size; r++)
                CHECK(all[r * N] == r * 1e6 + c && all[r * N + N - 1] == r * 1e6 + c + N - 1,
                      "gather loop %d from %d", c, r);
    }
    free(all);
}

int main(int argc, char **argv)
{
    lt_init("coll_small", &argc, &argv);
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    MPI_Op matop;
    MPI_OK(MPI_Op_create(mat_op, 0, &matop));
    static const int lens[] = {1, 2, 7, 8, 24, 25, 55, 56, 57, 64, 100, 255, 256, 257, 300, 1024};
    int nl = (int)(sizeof lens / sizeof lens[0]);
    MPI_Comm half;
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, lt_rank % 2, -lt_rank, &half));
    for (int round = 0; round < rounds; round++) {
        for (int l = 0; l < nl; l++) {
            bytes_rooted(MPI_COMM_WORLD, round + l, lens[l]);
            bytes_rooted(half, round + l, lens[l]);
            bytes_all(MPI_COMM_WORLD, round + l, lens[l] < 64 ? lens[l] : lens[l] / lt_size + 1);
            bytes_all(half, round + l, lens[l] < 64 ? lens[l] : lens[l] / lt_size + 1);
        }
        for (int n = 1; n <= 40; n += (n < 4 ? 1 : 9)) {
            reductions(MPI_COMM_WORLD, round, n, matop);
            reductions(half, round, n, matop);
        }
        in_flight(MPI_COMM_WORLD, round);
        in_flight(half, round);
        small_v(MPI_COMM_WORLD, round);
        small_v(half, round);
    }
    run_ahead(MPI_COMM_WORLD, 300);
    MPI_OK(MPI_Comm_free(&half));
    MPI_OK(MPI_Op_free(&matop));
    printf("digest %d %016llx\n", lt_rank, digest);
    fflush(stdout);
    if (argc < 3)
        return lt_finish();
    long total = lt_total_failures();
    lt_print_verdict(total);
    gather_loop(atoi(argv[2]));
    MPI_Finalize();
    return total == 0 && lt_errs == 0 ? 0 : 1;
}
