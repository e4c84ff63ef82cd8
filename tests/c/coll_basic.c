/* Collectives: Barrier, Bcast from every root, Reduce/Allreduce with the
 * predefined ops and types (incl. MPI_IN_PLACE and loc ops), and bitwise
 * determinism of floating-point Allreduce. */
#include "lt.h"

/* ---- Barrier ---------------------------------------------------------- */

/* Ready sends are only legal once the receive is posted; the barrier is
 * what guarantees that here. */
static void barrier_orders_rsend(void)
{
    int i, v = -1, round;
    for (round = 0; round < 3; round++) {
        MPI_Request req = MPI_REQUEST_NULL;
        if (lt_rank != 0)
            MPI_OK(MPI_Irecv(&v, 1, MPI_INT, 0, 500 + round, MPI_COMM_WORLD, &req));
        MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
        if (lt_rank == 0) {
            int x = 4242 + round;
            for (i = 1; i < lt_size; i++)
                MPI_OK(MPI_Rsend(&x, 1, MPI_INT, i, 500 + round, MPI_COMM_WORLD));
        } else {
            MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
            CHECK(v == 4242 + round, "barrier/rsend round %d got %d", round, v);
        }
    }
    for (i = 0; i < 20; i++)
        MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_OK(MPI_Barrier(MPI_COMM_SELF));
}

/* ---- Bcast ------------------------------------------------------------ */

static unsigned char bpat(int root, int t, size_t i)
{
    return (unsigned char)(root * 29 + t * 7 + i * 13 + (i >> 11));
}

static void bcast_all_roots(void)
{
    static const int byte_counts[] = {0, 1, 1000, 1 << 20};
    MPI_Datatype types[] = {MPI_BYTE, MPI_CHAR, MPI_INT, MPI_DOUBLE, MPI_LONG};
    const int tsize[] = {1, 1, (int)sizeof(int), (int)sizeof(double), (int)sizeof(long)};
    unsigned char *buf = malloc(1 << 20);
    int root, t, c;
    for (root = 0; root < lt_size; root++)
        for (t = 0; t < 5; t++)
            for (c = 0; c < 4; c++) {
                int count = byte_counts[c] / tsize[t];
                size_t nbytes = (size_t)count * (size_t)tsize[t], i;
                if (c == 3 && t >= 2 && root != (t % lt_size))
                    continue; /* 1 MiB for every type from one root only: keeps runtime sane */
                for (i = 0; i < nbytes; i++)
                    buf[i] = lt_rank == root ? bpat(root, t, i) : 0xA5;
                MPI_OK(MPI_Bcast(buf, count, types[t], root, MPI_COMM_WORLD));
                for (i = 0; i < nbytes; i++)
                    if (buf[i] != bpat(root, t, i)) {
                        CHECK(0, "Bcast root %d type %d count %d: byte %zu wrong", root, t,
                              count, i);
                        break;
                    }
            }
    free(buf);
}

/* ---- Reduce / Allreduce ----------------------------------------------- */

enum opk { SUM, PROD, MAX, MIN, LAND, LOR, LXOR, BAND, BOR, BXOR, NOPS };
static const char *op_name[] = {"SUM", "PROD", "MAX", "MIN", "LAND",
                                "LOR", "LXOR", "BAND", "BOR", "BXOR"};
static MPI_Op op_handle(enum opk k)
{
    switch (k) {
    case SUM: return MPI_SUM;
    case PROD: return MPI_PROD;
    case MAX: return MPI_MAX;
    case MIN: return MPI_MIN;
    case LAND: return MPI_LAND;
    case LOR: return MPI_LOR;
    case LXOR: return MPI_LXOR;
    case BAND: return MPI_BAND;
    case BOR: return MPI_BOR;
    default: return MPI_BXOR;
    }
}

/* Input of rank r at index i for op k, as a small integer so every type
 * holds it exactly and sums/products cannot overflow. */
static long gen(enum opk k, int r, int i, int is_unsigned)
{
    int h = (r * 31 + i * 17) % 23;
    switch (k) {
    case SUM: return is_unsigned ? h : h - 11;
    case PROD: {
        int m = (r + i) % 5;
        if (m == 0) return 2;
        if (m == 1 && !is_unsigned) return -1;
        return 1;
    }
    case MAX:
    case MIN: return is_unsigned ? (h * 5) % 23 : (h * 5) % 23 - 11;
    case LAND: return (i % (lt_size + 1) == r) ? 0 : (i % 3) + 1;
    case LOR: return (i % (lt_size + 1) == r) ? (i % 3) + 1 : 0;
    case LXOR: return ((r * 3 + i) % 4 == 0) ? 0 : 5;
    default: return (r * 0x35 + i * 0x1b + (r ^ i)) & 0x7f;
    }
}

/* MPICH 4.0.2 crashes in Reduce with MPI_IN_PLACE at a non-zero root once
 * the message exceeds its short-message size (2048 bytes); only there do we
 * fall back to a separate send buffer. Lanai gets the full test. */
static int mpich_inplace_reduce_bug(int all, int in_place, int root, int bytes)
{
    static int on_mpich = -1;
    if (all || !in_place || root == 0 || bytes <= 2048)
        return 0;
    if (on_mpich < 0)
        on_mpich = lt_running_on_mpich();
    return on_mpich;
}

#define DEFINE_REDUCE_TEST(T, NAME, IS_UNSIGNED, IS_FLOAT)                              \
    static T combine_##NAME(enum opk k, T a, T b)                                        \
    {                                                                                    \
        switch (k) {                                                                     \
        case SUM: return (T)(a + b);                                                     \
        case PROD: return (T)(a * b);                                                    \
        case MAX: return a > b ? a : b;                                                  \
        case MIN: return a < b ? a : b;                                                  \
        case LAND: return (T)((a != 0) && (b != 0));                                     \
        case LOR: return (T)((a != 0) || (b != 0));                                      \
        case LXOR: return (T)((a != 0) != (b != 0));                                     \
        case BAND: return (T)((long)a & (long)b);                                        \
        case BOR: return (T)((long)a | (long)b);                                         \
        default: return (T)((long)a ^ (long)b);                                          \
        }                                                                                \
    }                                                                                    \
    static void reduce_##NAME(MPI_Datatype dt, enum opk k, int root, int count,          \
                              int in_place, int all)                                      \
    {                                                                                    \
        T *in = malloc(sizeof(T) * (size_t)(count + 1));                                 \
        T *out = malloc(sizeof(T) * (size_t)(count + 1));                                \
        int i, r;                                                                        \
        const void *sbuf = in;                                                           \
        if (mpich_inplace_reduce_bug(all, in_place, root, count * (int)sizeof(T)))      \
            in_place = 0;                                                                \
        for (i = 0; i < count; i++) {                                                    \
            in[i] = (T)gen(k, lt_rank, i, IS_UNSIGNED);                                  \
            out[i] = (T)77;                                                              \
        }                                                                                \
        if (in_place && (all || lt_rank == root)) {                                      \
            for (i = 0; i < count; i++)                                                  \
                out[i] = in[i];                                                          \
            sbuf = MPI_IN_PLACE;                                                         \
        }                                                                                \
        if (all)                                                                         \
            MPI_OK(MPI_Allreduce(sbuf, out, count, dt, op_handle(k), MPI_COMM_WORLD));   \
        else                                                                             \
            MPI_OK(MPI_Reduce(sbuf, out, count, dt, op_handle(k), root, MPI_COMM_WORLD)); \
        if (all || lt_rank == root) {                                                    \
            for (i = 0; i < count; i++) {                                                \
                T want = (T)gen(k, 0, i, IS_UNSIGNED);                                   \
                if (k == LAND || k == LOR || k == LXOR)                                  \
                    want = (T)(want != 0);                                               \
                for (r = 1; r < lt_size; r++)                                            \
                    want = combine_##NAME(k, want, (T)gen(k, r, i, IS_UNSIGNED));        \
                if ((k == LAND || k == LOR || k == LXOR) ? ((out[i] != 0) != (want != 0))  \
                                                          : (out[i] != want)) {            \
                    CHECK(0, "%s %s %s root %d count %d inplace %d: [%d] = %g want %g",  \
                          all ? "Allreduce" : "Reduce", #NAME, op_name[k], root, count,  \
                          in_place, i, (double)out[i], (double)want);                    \
                    break;                                                               \
                }                                                                        \
            }                                                                            \
        } else if (!in_place) {                                                          \
            for (i = 0; i < count; i++)                                                  \
                CHECK(out[i] == (T)77, "Reduce wrote recvbuf on non-root %d", lt_rank);  \
        }                                                                                \
        free(in);                                                                        \
        free(out);                                                                       \
    }

DEFINE_REDUCE_TEST(int, int, 0, 0)
DEFINE_REDUCE_TEST(long, long, 0, 0)
DEFINE_REDUCE_TEST(unsigned, unsigned, 1, 0)
DEFINE_REDUCE_TEST(signed char, schar, 0, 0)
DEFINE_REDUCE_TEST(unsigned char, uchar, 1, 0)
DEFINE_REDUCE_TEST(double, double, 0, 1)
DEFINE_REDUCE_TEST(float, float, 0, 1)

typedef void (*reduce_fn)(MPI_Datatype, enum opk, int, int, int, int);
struct rtype {
    const char *name;
    MPI_Datatype dt;
    reduce_fn fn;
    int is_float;
};

static void reduce_matrix(void)
{
    struct rtype types[] = {
        {"int", MPI_INT, reduce_int, 0},
        {"long", MPI_LONG, reduce_long, 0},
        {"unsigned", MPI_UNSIGNED, reduce_unsigned, 0},
        {"signed char", MPI_SIGNED_CHAR, reduce_schar, 0},
        {"unsigned char", MPI_UNSIGNED_CHAR, reduce_uchar, 0},
        {"double", MPI_DOUBLE, reduce_double, 1},
        {"float", MPI_FLOAT, reduce_float, 1},
    };
    static const int counts[] = {3, 1000};
    int t, k, c, root, ip;
    for (t = 0; t < 7; t++)
        for (k = 0; k < NOPS; k++) {
            /* Logical and bitwise ops are not defined on floating types. */
            if (types[t].is_float && k >= LAND)
                continue;
            /* In-place alternates so both forms meet every type and op. */
            for (c = 0; c < 2; c++) {
                int r0 = (t + k + c) % lt_size;
                ip = (t + k + c) % 2;
                types[t].fn(types[t].dt, (enum opk)k, r0, counts[c], ip, 1);
                types[t].fn(types[t].dt, (enum opk)k, r0, counts[c], !ip, 0);
            }
        }
    /* Every root for a few combinations. */
    for (root = 0; root < lt_size; root++)
        for (ip = 0; ip < 2; ip++) {
            reduce_int(MPI_INT, SUM, root, 1000, ip, 0);
            reduce_double(MPI_DOUBLE, MAX, root, 100, ip, 0);
            reduce_unsigned(MPI_UNSIGNED, BXOR, root, 10, ip, 0);
        }
    /* Zero count and one large count. */
    reduce_int(MPI_INT, SUM, 0, 0, 0, 1);
    reduce_int(MPI_INT, SUM, lt_size - 1, 0, 0, 0);
    reduce_double(MPI_DOUBLE, SUM, 0, 300000, 0, 1);
    reduce_long(MPI_LONG, MIN, lt_size - 1, 300000, 1, 0);
}

/* ---- MAXLOC / MINLOC -------------------------------------------------- */

struct int2 {
    int v, idx;
};
struct dblint {
    double v;
    int idx;
};

/* Values repeat across ranks so that ties (lowest index wins) occur. */
static int locval(int r, int i) { return (r * 7 + i * 3) % 5; }

static void loc_ops(void)
{
    enum { N = 50 };
    struct int2 a[N], ra[N];
    struct dblint b[N], rb[N];
    int i, r, op, root, all;
    for (op = 0; op < 2; op++)
        for (all = 0; all < 2; all++)
            for (root = 0; root < lt_size; root++) {
                MPI_Op mop = op == 0 ? MPI_MAXLOC : MPI_MINLOC;
                if (all && root > 0)
                    break;
                for (i = 0; i < N; i++) {
                    a[i].v = locval(lt_rank, i);
                    a[i].idx = lt_rank;
                    b[i].v = locval(lt_rank, i) * 0.5;
                    b[i].idx = lt_rank * 10;
                    ra[i].v = ra[i].idx = -99;
                    rb[i].v = -99;
                    rb[i].idx = -99;
                }
                if (all) {
                    MPI_OK(MPI_Allreduce(a, ra, N, MPI_2INT, mop, MPI_COMM_WORLD));
                    MPI_OK(MPI_Allreduce(MPI_IN_PLACE, b, N, MPI_DOUBLE_INT, mop,
                                         MPI_COMM_WORLD));
                    memcpy(rb, b, sizeof b);
                } else {
                    MPI_OK(MPI_Reduce(a, ra, N, MPI_2INT, mop, root, MPI_COMM_WORLD));
                    MPI_OK(MPI_Reduce(b, rb, N, MPI_DOUBLE_INT, mop, root, MPI_COMM_WORLD));
                }
                if (!all && lt_rank != root)
                    continue;
                for (i = 0; i < N; i++) {
                    int best = locval(0, i), at = 0;
                    for (r = 1; r < lt_size; r++) {
                        int v = locval(r, i);
                        if (op == 0 ? v > best : v < best) {
                            best = v;
                            at = r;
                        }
                    }
                    CHECK(ra[i].v == best && ra[i].idx == at,
                          "%s 2INT all=%d root %d [%d]: (%d,%d) want (%d,%d)",
                          op ? "MINLOC" : "MAXLOC", all, root, i, ra[i].v, ra[i].idx, best, at);
                    CHECK(rb[i].v == best * 0.5 && rb[i].idx == at * 10,
                          "%s DOUBLE_INT all=%d root %d [%d]: (%g,%d) want (%g,%d)",
                          op ? "MINLOC" : "MAXLOC", all, root, i, rb[i].v, rb[i].idx,
                          best * 0.5, at * 10);
                }
            }
}

/* ---- Determinism ------------------------------------------------------ */

/* Values whose sum depends on association order: 1e16 + 1 - 1e16 ... */
static double det_value(int r, int i)
{
    static const double v[] = {1e16, 1.0, -1e16, 3.0, 1e-3, -7.5e15, 0.1, 2.5e15};
    return v[(r + i) % 8] * (1.0 + (i % 5) * 1e-9) + (double)r * 1e-7;
}

static void determinism(void)
{
    enum { N = 64 };
    double in[N], out1[N], out2[N], ref[N];
    int i;
    for (i = 0; i < N; i++)
        in[i] = det_value(lt_rank, i);
    MPI_OK(MPI_Allreduce(in, out1, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    MPI_OK(MPI_Allreduce(in, out2, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    CHECK(memcmp(out1, out2, sizeof out1) == 0, "Allreduce not reproducible run to run");
    memcpy(ref, out1, sizeof ref);
    MPI_OK(MPI_Bcast(ref, N, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    CHECK(memcmp(out1, ref, sizeof ref) == 0, "Allreduce result differs from rank 0's bitwise");
    /* Float too, in place. */
    {
        float f[N], fref[N];
        for (i = 0; i < N; i++)
            f[i] = (float)det_value(lt_rank, i) * 1e-8f;
        MPI_OK(MPI_Allreduce(MPI_IN_PLACE, f, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
        memcpy(fref, f, sizeof f);
        MPI_OK(MPI_Bcast(fref, N, MPI_FLOAT, lt_size - 1, MPI_COMM_WORLD));
        CHECK(memcmp(f, fref, sizeof f) == 0, "float Allreduce differs across ranks bitwise");
    }
}

int main(int argc, char **argv)
{
    lt_init("coll_basic", &argc, &argv);
    barrier_orders_rsend();
    bcast_all_roots();
    reduce_matrix();
    loc_ops();
    determinism();
    return lt_finish();
}
