/* Ranks that run ahead of slow ones. A loop of reduces to a root that
 * lingers a little at every call, so the others finish their calls long
 * before the root starts them; or, with "bcast", a loop of broadcasts
 * from a root that runs ahead of lingering receivers; with "bcast-in-mpi",
 * receivers that linger inside MPI (in MPI_Iprobe), so they keep taking
 * the root's messages off the wire; with "gather", a loop of gathers to a
 * root that lingers. Every result is checked. A library
 * that keeps every early message, or lets senders queue without limit,
 * grows by calls * bytes per receiver; each rank's peak resident size
 * may grow by at most `limit_mib` over the loop.
 * usage: coll_runahead [calls] [bytes] [limit_mib] [reduce|bcast|bcast-in-mpi|gather]
 * (limit 0: no check) */
#include "lt.h"

static long val(int rank, int i, int call) { return (long)rank * 1000003 + i % 977 + call; }

/* Busy for `us` microseconds: the root's work between its calls; or,
 * `in_mpi`, probing for a message that never comes. */
static void linger(int us, int in_mpi)
{
    double end = MPI_Wtime() + us * 1e-6;
    int flag;
    while (MPI_Wtime() < end)
        if (in_mpi)
            MPI_OK(MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
}

int main(int argc, char **argv)
{
    lt_init("coll_runahead", &argc, &argv);
    int calls = argc > 1 ? atoi(argv[1]) : 3000;
    int bytes = argc > 2 ? atoi(argv[2]) : 65536;
    long limit_mib = argc > 3 ? atol(argv[3]) : 32;
    int in_mpi = argc > 4 && !strcmp(argv[4], "bcast-in-mpi");
    int bcast = in_mpi || (argc > 4 && !strcmp(argv[4], "bcast"));
    int gather = argc > 4 && !strcmp(argv[4], "gather");
    int n = bytes / (int)sizeof(long);
    long *in = malloc(sizeof(long) * n), *out = malloc(sizeof(long) * n * (gather ? lt_size : 1));
    long base = 0;
    for (int call = 0; call < calls; call++) {
        if (bcast) {
            for (int i = 0; i < n; i++)
                in[i] = lt_rank == 0 ? val(0, i, call) : -1;
            MPI_OK(MPI_Bcast(in, n, MPI_LONG, 0, MPI_COMM_WORLD));
            if (lt_rank != 0) {
                for (int i = 0; i < n; i++)
                    CHECK(in[i] == val(0, i, call), "call %d [%d]: %ld, want %ld", call, i, in[i],
                          val(0, i, call));
                linger(40, in_mpi);
            }
            if (call == 0)
                base = lt_peak_kib();
            continue;
        }
        if (gather) {
            for (int i = 0; i < n; i++)
                in[i] = val(lt_rank, i, call);
            MPI_OK(MPI_Gather(in, n, MPI_LONG, out, n, MPI_LONG, 0, MPI_COMM_WORLD));
            if (lt_rank == 0) {
                for (int r = 0; r < lt_size; r++)
                    for (int i = 0; i < n; i++)
                        CHECK(out[(long)r * n + i] == val(r, i, call), "call %d block %d [%d]: %ld",
                              call, r, i, out[(long)r * n + i]);
                linger(40, 0);
            }
            if (call == 0)
                base = lt_peak_kib();
            continue;
        }
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
            linger(40, 0);
        }
        /* After a first call, so the library's own start-up is counted out. */
        if (call == 0)
            base = lt_peak_kib();
    }
    char what[64];
    snprintf(what, sizeof what, "%d %s of %d bytes", calls, bcast ? "broadcasts" : gather ? "gathers" : "reduces", bytes);
    LT_CHECK_GROWTH(base, limit_mib, what);
    free(in);
    free(out);
    return lt_finish();
}
