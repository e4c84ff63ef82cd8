/* Ranks that run ahead of a slow root. A loop of large reduces to a root
 * that lingers a little at every call, so the others finish their calls
 * long before the root starts them; every result is checked. A library
 * that keeps every early contribution for the root, or lets the others
 * queue without limit, grows by calls * bytes per child; each rank's peak
 * resident size may grow by at most `limit_mib` over the loop.
 * usage: coll_runahead [calls] [bytes] [limit_mib]   (limit 0: no check) */
#include "lt.h"

static long val(int rank, int i, int call) { return (long)rank * 1000003 + i % 977 + call; }

/* Busy for `us` microseconds: the root's work between its calls. */
static void linger(int us)
{
    double end = MPI_Wtime() + us * 1e-6;
    while (MPI_Wtime() < end)
        ;
}

int main(int argc, char **argv)
{
    lt_init("coll_runahead", &argc, &argv);
    int calls = argc > 1 ? atoi(argv[1]) : 3000;
    int bytes = argc > 2 ? atoi(argv[2]) : 65536;
    long limit_mib = argc > 3 ? atol(argv[3]) : 32;
    int n = bytes / (int)sizeof(long);
    long *in = malloc(sizeof(long) * n), *out = malloc(sizeof(long) * n);
    long base = 0;
    for (int call = 0; call < calls; call++) {
        for (int i = 0; i < n; i++)
            in[i] = val(lt_rank, i, call);
        MPI_OK(MPI_Reduce(in, out, n, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
        if (lt_rank == 0) {
            for (int i = 0; i < n; i++) {
                long want = 0;
                for (int r = 0; r < lt_size; r++)
                    want += val(r, i, call);
                CHECK(out[i] == want, "call %d [%d]: %ld, want %ld", call, i, out[i], want);
            }
            linger(40);
        }
        /* After a first call, so the library's own start-up is counted out. */
        if (call == 0)
            base = lt_peak_kib();
    }
    char what[64];
    snprintf(what, sizeof what, "%d reduces of %d bytes", calls, bytes);
    LT_CHECK_GROWTH(base, limit_mib, what);
    free(in);
    free(out);
    return lt_finish();
}
