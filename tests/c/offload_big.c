/* offload_big: collectives larger than one engine slot (64 KiB), which the
 * offload engine runs as pipelined chunks. Checks, at several sizes up to
 * 48 chunks (more than the 16 slots a rank has):
 *   - MPI_Allreduce / MPI_Reduce of doubles (sum) and MPI_DOUBLE_INT
 *     (maxloc, whose 12- or 16-byte elements must not straddle chunks),
 *     against values computed locally, and a digest of the float bits;
 *   - MPI_Bcast of bytes from a non-zero root;
 *   - a nonblocking MPI_Iallreduce posted before a point-to-point exchange
 *     that the peer only answers before posting its own (a call that waited
 *     for free slots would deadlock here).
 * Rank 0 prints DIGEST <hex> over every rank's float results. */
#include "lt.h"

#include <math.h>

#define FNV_OFFSET 0xcbf29ce484222325ULL
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 0x100000001b3ULL; }
    return h;
}

typedef struct { double v; int i; } dint;

static double val(int r, long i) { return (double)((r * 7919 + i * 31) % 1013) / 7.0 + 1e-3 * r; }

/* Elements of a sum over `size` ranks that miss the locally computed sum
 * by more than rounding allows. */
static long wrong_sums(const double *out, long n, int size) {
    long bad = 0;
    for (long i = 0; i < n; i++) {
        double want = 0, mag = 0;
        for (int r = 0; r < size; r++) { want += val(r, i); mag += fabs(val(r, i)); }
        if (fabs(out[i] - want) > 4.0 * size * 2.3e-16 * mag) bad++;
    }
    return bad;
}

int main(int argc, char **argv) {
    lt_init("offload_big", &argc, &argv);
    int rank = lt_rank, size = lt_size;
    uint64_t dg = FNV_OFFSET;
    const long counts[] = {8193, 131072, 3 * 131072 + 5};
    for (int c = 0; c < 3; c++) {
        long n = counts[c];
        double *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
        for (long i = 0; i < n; i++) in[i] = val(rank, i);
        MPI_OK(MPI_Allreduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        long bad = wrong_sums(out, n, size);
        CHECK(bad == 0, "Allreduce of %ld doubles: %ld wrong", n, bad);
        dg = fnv(dg, out, n * sizeof *out);

        int root = size - 1;
        for (long i = 0; i < n; i++) out[i] = -1;
        MPI_OK(MPI_Reduce(in, rank == root ? out : NULL, (int)n, MPI_DOUBLE, MPI_SUM, root,
                          MPI_COMM_WORLD));
        if (rank == root) {
            bad = wrong_sums(out, n, size);
            CHECK(bad == 0, "Reduce of %ld doubles: %ld wrong", n, bad);
            dg = fnv(dg, out, n * sizeof *out);
        }

        dint *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
        for (long i = 0; i < n; i++) { a[i].v = (double)((rank * 13 + i) % 5); a[i].i = rank; }
        MPI_OK(MPI_Allreduce(a, b, (int)n, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD));
        bad = 0;
        for (long i = 0; i < n; i++) {
            double best = -1; int who = -1;
            for (int r = 0; r < size; r++) {
                double v = (double)((r * 13 + i) % 5);
                if (v > best) { best = v; who = r; }
            }
            if (b[i].v != best || b[i].i != who) bad++;
        }
        CHECK(bad == 0, "Allreduce MAXLOC of %ld double-int pairs: %ld wrong", n, bad);

        unsigned char *bytes = malloc(n * 8);
        for (long i = 0; i < n * 8; i++) bytes[i] = rank == 1 % size ? (unsigned char)(i * 7 + 3) : 0;
        MPI_OK(MPI_Bcast(bytes, (int)(n * 8), MPI_BYTE, 1 % size, MPI_COMM_WORLD));
        bad = 0;
        for (long i = 0; i < n * 8; i++) bad += bytes[i] != (unsigned char)(i * 7 + 3);
        CHECK(bad == 0, "Bcast of %ld bytes: %ld wrong", n * 8, bad);
        free(in); free(out); free(a); free(b); free(bytes);
    }

    /* Rank 0 posts first and then sends; rank 1 receives before posting. */
    if (size >= 2) {
        long n = 3 * 131072;
        double *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
        for (long i = 0; i < n; i++) in[i] = (double)(rank + i % 3);
        MPI_Request q;
        int token = 0;
        if (rank == 0) {
            MPI_OK(MPI_Iallreduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q));
            token = 42;
            MPI_OK(MPI_Send(&token, 1, MPI_INT, 1, 5, MPI_COMM_WORLD));
        } else {
            if (rank == 1)
                MPI_OK(MPI_Recv(&token, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MPI_OK(MPI_Iallreduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q));
        }
        MPI_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        long bad = 0;
        for (long i = 0; i < n; i++)
            bad += out[i] != (double)size * (size - 1) / 2 + (double)size * (i % 3);
        CHECK(bad == 0, "Iallreduce before a send: %ld wrong", bad);
        free(in); free(out);
    }

    unsigned long long mine = dg, all = 0;
    unsigned long long *every = rank == 0 ? malloc(sizeof *every * size) : NULL;
    MPI_OK(MPI_Gather(&mine, 1, MPI_UNSIGNED_LONG_LONG, every, 1, MPI_UNSIGNED_LONG_LONG, 0,
                      MPI_COMM_WORLD));
    if (rank == 0) {
        uint64_t h = FNV_OFFSET;
        for (int r = 0; r < size; r++) h = fnv(h, &every[r], sizeof every[r]);
        all = h;
        printf("DIGEST %016llx\n", all);
        free(every);
    }
    return lt_finish();
}
