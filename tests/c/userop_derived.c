/* User-defined operations on non-contiguous derived datatypes: a struct
 * with holes (unsigned, double, unsigned in 24 bytes) under a
 * non-commutative, associative operation (composition of affine maps plus
 * a sum), and a strided vector of ints under a commutative max. Checks
 * Allreduce, Reduce (root = last rank), Scan, Exscan,
 * Reduce_scatter_block, Reduce_scatter and Iallreduce against folds in
 * rank order computed here, and that holes in the receive buffer are left
 * untouched. Argument "mpich" skips Reduce_scatter_block, which overflows
 * a heap buffer inside MPICH 4.0.2 with this struct type (AddressSanitizer
 * shows it in MPI_Reduce_scatter_block), so the rest can be checked on
 * real MPICH. */
#include "lt.h"

typedef struct { unsigned a; double x; unsigned b; } S;

static void compose(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    S *p = in, *q = inout;
    for (int i = 0; i < *len; i++) {
        /* x -> q.a (p.a x + p.b) + q.b: p first, then q. */
        unsigned a = p[i].a * q[i].a, b = q[i].a * p[i].b + q[i].b;
        q[i].a = a;
        q[i].b = b;
        q[i].x = p[i].x + q[i].x;
    }
}

/* The vector: 2 ints, stride 3, so an element spans 4 ints (extent 16). */
static void vmax(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    int *p = in, *q = inout;
    for (int i = 0; i < *len; i++)
        for (int k = 0; k < 4; k += 3)
            if (p[4 * i + k] > q[4 * i + k]) q[4 * i + k] = p[4 * i + k];
}

static S val(int r, int i) {
    S s = {(unsigned)(3 + 2 * r + i), (double)(r * 10 + i), (unsigned)(r * 7 + i + 1)};
    return s;
}

static S op(S lo, S hi) {
    S q = hi;
    compose(&lo, &q, &(int){1}, NULL);
    return q;
}

/* v_from op ... op v_to, in rank order. */
static S fold(int from, int to, int i) {
    S acc = val(from, i);
    for (int r = from + 1; r <= to; r++) acc = op(acc, val(r, i));
    return acc;
}

static int same(S a, S b) { return a.a == b.a && a.b == b.b && a.x == b.x; }

/* Holes (bytes 4..8 and 20..24) still hold the fill pattern. */
static int holes_kept(const S *s, int n) {
    for (int i = 0; i < n; i++) {
        const unsigned char *c = (const unsigned char *)&s[i];
        for (int k = 4; k < 8; k++) if (c[k] != 0xAB) return 0;
        for (int k = 20; k < 24; k++) if (c[k] != 0xAB) return 0;
    }
    return 1;
}

int main(int argc, char **argv) {
    lt_init("userop_derived", &argc, &argv);
    int rank = lt_rank, size = lt_size;
    MPI_Datatype st, sr, vt;
    int bl[3] = {1, 1, 1};
    MPI_Aint disp[3] = {0, 8, 16};
    MPI_Datatype types[3] = {MPI_UNSIGNED, MPI_DOUBLE, MPI_UNSIGNED};
    MPI_OK(MPI_Type_create_struct(3, bl, disp, types, &st));
    MPI_OK(MPI_Type_create_resized(st, 0, sizeof(S), &sr));
    MPI_OK(MPI_Type_commit(&sr));
    MPI_OK(MPI_Type_vector(2, 1, 3, MPI_INT, &vt));
    MPI_OK(MPI_Type_commit(&vt));
    MPI_Op cop, mop;
    MPI_OK(MPI_Op_create(compose, 0, &cop));
    MPI_OK(MPI_Op_create(vmax, 1, &mop));

    enum { N = 5 };
    int nb = N * size;
    S *in = malloc(sizeof(S) * nb), *out = malloc(sizeof(S) * nb);
    for (int i = 0; i < nb; i++) in[i] = val(rank, i);

    memset(out, 0xAB, sizeof(S) * nb);
    MPI_OK(MPI_Allreduce(in, out, N, sr, cop, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++)
        CHECK(same(out[i], fold(0, size - 1, i)), "Allreduce element %d: a=%u b=%u x=%g", i,
              out[i].a, out[i].b, out[i].x);
    CHECK(holes_kept(out, N), "Allreduce wrote into the struct's holes");

    memset(out, 0xAB, sizeof(S) * nb);
    MPI_OK(MPI_Reduce(in, out, N, sr, cop, size - 1, MPI_COMM_WORLD));
    if (rank == size - 1) {
        for (int i = 0; i < N; i++)
            CHECK(same(out[i], fold(0, size - 1, i)), "Reduce element %d", i);
        CHECK(holes_kept(out, N), "Reduce wrote into the struct's holes");
    }

    memset(out, 0xAB, sizeof(S) * nb);
    MPI_OK(MPI_Scan(in, out, N, sr, cop, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++) CHECK(same(out[i], fold(0, rank, i)), "Scan element %d", i);

    memset(out, 0xAB, sizeof(S) * nb);
    MPI_OK(MPI_Exscan(in, out, N, sr, cop, MPI_COMM_WORLD));
    if (rank > 0)
        for (int i = 0; i < N; i++)
            CHECK(same(out[i], fold(0, rank - 1, i)), "Exscan element %d", i);

    if (!(argc > 1 && strcmp(argv[1], "mpich") == 0)) {
        memset(out, 0xAB, sizeof(S) * nb);
        MPI_OK(MPI_Reduce_scatter_block(in, out, N, sr, cop, MPI_COMM_WORLD));
        for (int i = 0; i < N; i++)
            CHECK(same(out[i], fold(0, size - 1, rank * N + i)),
                  "Reduce_scatter_block element %d", i);
    }

    int *counts = malloc(sizeof(int) * size), off = 0;
    for (int r = 0; r < size; r++) counts[r] = 1 + r % 3;
    for (int r = 0; r < rank; r++) off += counts[r];
    int total = 0;
    for (int r = 0; r < size; r++) total += counts[r];
    if (total <= nb) {
        memset(out, 0xAB, sizeof(S) * nb);
        MPI_OK(MPI_Reduce_scatter(in, out, counts, sr, cop, MPI_COMM_WORLD));
        for (int i = 0; i < counts[rank]; i++)
            CHECK(same(out[i], fold(0, size - 1, off + i)), "Reduce_scatter element %d", i);
    }

    MPI_Request q;
    memset(out, 0xAB, sizeof(S) * nb);
    MPI_OK(MPI_Iallreduce(in, out, N, sr, cop, MPI_COMM_WORLD, &q));
    MPI_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    for (int i = 0; i < N; i++) CHECK(same(out[i], fold(0, size - 1, i)), "Iallreduce element %d", i);

    /* The vector: holes at ints 1 and 2 of each element keep -7. */
    int vin[4 * N], vout[4 * N];
    for (int i = 0; i < 4 * N; i++) { vin[i] = (rank * 13 + i * 5) % 17; vout[i] = -7; }
    MPI_OK(MPI_Allreduce(vin, vout, N, vt, mop, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 4; k++) {
            int want = -7;
            if (k == 0 || k == 3)
                for (int r = 0; r < size; r++) {
                    int v = (r * 13 + (4 * i + k) * 5) % 17;
                    if (r == 0 || v > want) want = v;
                }
            CHECK(vout[4 * i + k] == want, "vector Allreduce int %d: %d, want %d", 4 * i + k,
                  vout[4 * i + k], want);
        }

    free(in); free(out); free(counts);
    MPI_OK(MPI_Op_free(&cop));
    MPI_OK(MPI_Op_free(&mop));
    MPI_OK(MPI_Type_free(&sr));
    MPI_OK(MPI_Type_free(&st));
    MPI_OK(MPI_Type_free(&vt));
    return lt_finish();
}
