/* Medium reduces, the sizes Lanai stages on a node (from 56 bytes to
 * 64 KiB: each non-root copies its contribution into a staging slot and
 * the root folds them all where they lie), the sizes on either side, and
 * larger ones (in chunks through the same slots, every rank folding a
 * share). Those of up to 112 bytes, 168 where ranks share cores, go
 * through the mailboxes in pieces instead; 14, 15, 21 and 22 doubles,
 * 112, 113, 168 and 169 bytes sit on those edges.
 * Checked against values computed here:
 *  - float sums whose bits depend on the grouping, against the binomial
 *    fold of every rank's contribution done here, so the staged path must
 *    group exactly as the message-passing reduce does;
 *  - integer sums, at every root, also with MPI_IN_PLACE at the root;
 *  - a non-commutative user operation (composing affine maps), on a
 *    contiguous type and on a strided vector type, against the fold in
 *    rank order;
 *  - loops with no other call in between, so non-roots run ahead of their
 *    roots and wait for staging slots; two communicators taking turns;
 *    several MPI_Ireduce in flight, completed in reverse order.
 * usage: reduce_staged [rounds] */
#include "lt.h"

static const int dcounts[] = {1, 6, 7, 8, 14, 15, 21, 22, 100, 2048, 8191, 8192, 8193, 40000};
#define NDC ((int)(sizeof(dcounts) / sizeof(dcounts[0])))
static const int bcounts[] = {55, 56, 57, 112, 113, 168, 169, 4096, 65535, 65536, 65537, 300001};
#define NBC ((int)(sizeof(bcounts) / sizeof(bcounts[0])))

static double fval(int rank, int i, int round)
{
    static const double mags[5] = {1e16, 1.0, -1e16, 3.25, 1e-3};
    return mags[(rank + i + round) % 5] * (1.0 + rank * 1e-9 + i * 1e-12);
}

/* The binomial fold of x[0..p): what every reduce path computes. */
static double binomial(double *x, int p)
{
    for (int d = 1; d < p; d *= 2)
        for (int v = 0; v + d < p; v += 2 * d) {
            int lo = v + d - 1, hi = (v + 2 * d < p ? v + 2 * d : p) - 1;
            x[hi] = x[lo] + x[hi];
        }
    return x[p - 1];
}

/* Affine maps x -> a*x + b on unsigned 64-bit words: composition is
 * associative, not commutative. inout = in then inout. */
typedef struct {
    unsigned long long a, b;
} affine;

static void compose(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int per = 1;
    MPI_Aint lb, ext;
    MPI_Type_get_extent(*dt, &lb, &ext);
    if (*dt != MPI_DATATYPE_NULL && ext != (MPI_Aint)sizeof(affine)) {
        int size;
        MPI_Type_size(*dt, &size);
        per = size / (int)sizeof(affine);
    }
    /* A vector type of `per` affines: walk its elements with its stride. */
    for (int k = 0; k < *len; k++)
        for (int j = 0; j < per; j++) {
            MPI_Aint at = k * ext + (per > 1 ? j * 2 * (MPI_Aint)sizeof(affine) : 0);
            affine *f = (affine *)((char *)in + at), *g = (affine *)((char *)inout + at);
            affine r = {g->a * f->a, g->a * f->b + g->b};
            *g = r;
        }
}

static affine aval(int rank, int i) { return (affine){2 * (unsigned long long)rank + 3 + i, (unsigned long long)rank * 7 + i}; }

static void floats(MPI_Comm comm, int round)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    double *in = malloc(sizeof(double) * 40000), *out = malloc(sizeof(double) * 40000);
    double *x = malloc(sizeof(double) * size);
    for (int z = 0; z < NDC; z++) {
        int n = dcounts[z], root = (round + z) % size;
        for (int i = 0; i < n; i++)
            in[i] = fval(rank, i, round);
        MPI_OK(MPI_Reduce(in, out, n, MPI_DOUBLE, MPI_SUM, root, comm));
        /* MPICH groups float sums its own way: the bits are Lanai's claim. */
        if (rank != root || lt_running_on_mpich())
            continue;
        for (int i = 0; i < n; i++) {
            for (int r = 0; r < size; r++)
                x[r] = fval(r, i, round);
            double want = binomial(x, size);
            CHECK(memcmp(&want, &out[i], sizeof want) == 0, "float sum n=%d root %d [%d]: %.17g, want %.17g",
                  n, root, i, out[i], want);
        }
    }
    free(in);
    free(out);
    free(x);
}

static void bytes(MPI_Comm comm, int round)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    unsigned char *in = malloc(300001), *out = malloc(300001);
    for (int z = 0; z < NBC; z++) {
        int n = bcounts[z];
        for (int root = 0; root < size; root++) {
            for (int i = 0; i < n; i++)
                in[i] = (unsigned char)(rank * 31 + i * 7 + round);
            /* MPICH 4.0.2 crashes in place at a non-zero root above 2 KiB. */
            int in_place = rank == root && (z + root) % 2 && !(lt_running_on_mpich() && root && n > 2048);
            if (in_place)
                memcpy(out, in, n);
            MPI_OK(MPI_Reduce(in_place ? MPI_IN_PLACE : in, out, n, MPI_UNSIGNED_CHAR, MPI_SUM, root, comm));
            if (rank != root)
                continue;
            long bad = 0, first = -1;
            for (int i = 0; i < n; i++) {
                unsigned char want = 0;
                for (int r = 0; r < size; r++)
                    want += (unsigned char)(r * 31 + i * 7 + round);
                if (out[i] != want && bad++ == 0)
                    first = i;
            }
            CHECK(bad == 0, "byte sum n=%d root %d%s: %ld wrong, first [%ld]", n, root,
                  in_place ? " in place" : "", bad, first);
        }
    }
    free(in);
    free(out);
}

static void user_ops(MPI_Comm comm, MPI_Op op, MPI_Datatype vec)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    /* 64000 bytes of affines: staged; 192000: in chunks. */
    for (int pass = 0; pass < 2; pass++) {
    int n = pass ? 12000 : 4000;
    affine *in = malloc(sizeof(affine) * 2 * n), *out = malloc(sizeof(affine) * 2 * n);
    for (int i = 0; i < 2 * n; i++)
        in[i] = aval(rank, i);
    for (int root = 0; root < size; root++) {
        /* Contiguous: n affines as n elements of 2 words. */
        MPI_Datatype pair;
        MPI_Type_contiguous(2, MPI_UNSIGNED_LONG_LONG, &pair);
        MPI_Type_commit(&pair);
        memset(out, 0, sizeof(affine) * 2 * n);
        MPI_OK(MPI_Reduce(in, out, n, pair, op, root, comm));
        MPI_Type_free(&pair);
        /* Strided: n / 4 vectors of two affines, a gap between them. */
        affine *vout = out + n;
        MPI_OK(MPI_Reduce(in + n, vout, n / 4, vec, op, root, comm));
        if (rank != root)
            continue;
        for (int i = 0; i < n; i++) {
            affine want = aval(0, i);
            for (int r = 1; r < size; r++) {
                affine f = aval(r, i);
                affine next = {f.a * want.a, f.a * want.b + f.b};
                want = next;
            }
            CHECK(out[i].a == want.a && out[i].b == want.b, "user op root %d [%d]", root, i);
        }
        for (int i = 0; i < n; i++) {
            affine want = aval(0, n + i);
            for (int r = 1; r < size; r++) {
                affine f = aval(r, n + i);
                affine next = {f.a * want.a, f.a * want.b + f.b};
                want = next;
            }
            /* Vector k covers affines 3k and 3k + 2 (extent 48 bytes). */
            int covered = i < 3 * (n / 4) && i % 3 != 1;
            if (covered)
                CHECK(vout[i].a == want.a && vout[i].b == want.b, "vector user op root %d [%d]", root, i);
            else
                CHECK(vout[i].a == 0 && vout[i].b == 0, "vector gap root %d [%d] written", root, i);
        }
    }
    free(in);
    free(out);
    }
}

static void in_flight(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    enum { K = 6, N = 8192 };
    long *in = malloc(sizeof(long) * K * N), *out = malloc(sizeof(long) * K * N);
    MPI_Request q[K];
    for (int k = 0; k < K; k++) {
        for (int i = 0; i < N; i++)
            in[k * N + i] = (long)rank * 1000 + i + k;
        MPI_OK(MPI_Ireduce(in + k * N, out + k * N, N, MPI_LONG, MPI_SUM, k % size, comm, &q[k]));
    }
    for (int k = K - 1; k >= 0; k--)
        MPI_OK(MPI_Wait(&q[k], MPI_STATUS_IGNORE));
    for (int k = 0; k < K; k++) {
        if (rank != k % size)
            continue;
        for (int i = 0; i < N; i++) {
            long want = (long)size * (i + k) + 1000L * size * (size - 1) / 2;
            CHECK(out[k * N + i] == want, "ireduce %d [%d]: %ld, want %ld", k, i, out[k * N + i], want);
        }
    }
    free(in);
    free(out);
}

/* Many reduces back to back to root 0: the others run up to a slot ring
 * ahead and wait for slots; `other` takes every third turn. */
static void run_ahead(MPI_Comm comm, MPI_Comm other)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    enum { N = 4096 };
    int *in = malloc(sizeof(int) * N), *out = malloc(sizeof(int) * N);
    for (int call = 0; call < 200; call++) {
        MPI_Comm c = call % 3 == 2 ? other : comm;
        for (int i = 0; i < N; i++)
            in[i] = rank + i + call;
        MPI_OK(MPI_Reduce(in, out, N, MPI_INT, MPI_MAX, 0, c));
        if (rank == 0)
            for (int i = 0; i < N; i += 97)
                CHECK(out[i] == size - 1 + i + call, "run-ahead call %d [%d]: %d", call, i, out[i]);
    }
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    lt_init("reduce_staged", &argc, &argv);
    int rounds = argc > 1 ? atoi(argv[1]) : 2;
    MPI_Op op;
    MPI_Datatype vec;
    MPI_Comm dup, half;
    MPI_Op_create(compose, 0, &op);
    MPI_Type_vector(2, 2, 4, MPI_UNSIGNED_LONG_LONG, &vec);
    MPI_Type_commit(&vec);
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, lt_rank % 2, lt_rank, &half));
    /* A barrier sets each communicator's device up before the blocking calls. */
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int round = 0; round < rounds; round++) {
        floats(MPI_COMM_WORLD, round);
        floats(half, round);
        bytes(MPI_COMM_WORLD, round);
        bytes(dup, round);
    }
    user_ops(MPI_COMM_WORLD, op, vec);
    in_flight(MPI_COMM_WORLD);
    in_flight(half);
    run_ahead(MPI_COMM_WORLD, dup);
    MPI_Op_free(&op);
    MPI_Type_free(&vec);
    MPI_OK(MPI_Comm_free(&dup));
    MPI_OK(MPI_Comm_free(&half));
    return lt_finish();
}
