/* Collectives whose messages are large enough to pass by reference between
 * ranks of one node (coll_ref.rs), at sizes around the 16 KiB threshold and
 * well above it, blocking and several nonblocking ones in flight at once.
 * Every element of every result is checked against a value computed here.
 * usage: coll_by_ref [rounds]
 *        coll_by_ref kill   the last rank dies (SIGKILL) with a reference of
 *                           its own in flight while the others wait: they
 *                           may finish the allreduce it posted (it did
 *                           contribute), never the one after it */
#include "lt.h"
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>

static const int sizes[] = {2047, 2048, 2049, 2050, 8192, 65536 + 3, 262144};
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))

static long val(int rank, int i, int round) { return (long)rank * 100003 + i * 7 + round; }

/* Sum over ranks of val(r, i, round). */
static long sum(int i, int round)
{
    long s = 0;
    for (int r = 0; r < lt_size; r++)
        s += val(r, i, round);
    return s;
}

static void mode_kill(void)
{
    int n = 65536;
    long *in = malloc(sizeof(long) * n), *out = malloc(sizeof(long) * n);
    for (int i = 0; i < n; i++)
        in[i] = i;
    for (int k = 0; k < 5; k++)
        MPI_OK(MPI_Allreduce(in, out, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (lt_rank == lt_size - 1) {
        struct rlimit no_core = {0, 0};
        MPI_Request q;
        setrlimit(RLIMIT_CORE, &no_core);
        MPI_OK(MPI_Iallreduce(in, out, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &q));
        printf("coll_by_ref: rank %d killing itself\n", lt_rank);
        fflush(stdout);
        raise(SIGKILL);
    }
    MPI_Allreduce(in, out, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(in, out, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    printf("FAIL coll_by_ref rank %d: allreduce returned without the dead rank\n", lt_rank);
    fflush(stdout);
    exit(1);
}

int main(int argc, char **argv)
{
    lt_init("coll_by_ref", &argc, &argv);
    if (argc > 1 && !strcmp(argv[1], "kill"))
        mode_kill();
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    int max = sizes[NSIZES - 1];
    long *in = malloc(sizeof(long) * max), *out = malloc(sizeof(long) * max);
    long *nb_in[3], *nb_out[3];
    for (int k = 0; k < 3; k++) {
        nb_in[k] = malloc(sizeof(long) * max);
        nb_out[k] = malloc(sizeof(long) * max);
    }
    long *all = malloc(sizeof(long) * 8192 * lt_size);
    for (int round = 0; round < rounds; round++) {
        for (int z = 0; z < NSIZES; z++) {
            int n = sizes[z];
            for (int i = 0; i < n; i++)
                in[i] = val(lt_rank, i, round);

            MPI_OK(MPI_Allreduce(in, out, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
            for (int i = 0; i < n; i++)
                CHECK(out[i] == sum(i, round), "allreduce n=%d round %d [%d]: %ld", n, round, i, out[i]);

            int root = (round + z) % lt_size;
            memset(out, 0, sizeof(long) * n);
            MPI_OK(MPI_Reduce(in, out, n, MPI_LONG, MPI_SUM, root, MPI_COMM_WORLD));
            if (lt_rank == root)
                for (int i = 0; i < n; i++)
                    CHECK(out[i] == sum(i, round), "reduce n=%d root %d [%d]: %ld", n, root, i, out[i]);

            for (int i = 0; i < n; i++)
                out[i] = lt_rank == root ? val(root, i, round) : -1;
            MPI_OK(MPI_Bcast(out, n, MPI_LONG, root, MPI_COMM_WORLD));
            for (int i = 0; i < n; i++)
                CHECK(out[i] == val(root, i, round), "bcast n=%d root %d [%d]: %ld", n, root, i, out[i]);

            /* Three in flight at once, completed in reverse order. */
            MPI_Request q[3];
            for (int k = 0; k < 3; k++) {
                for (int i = 0; i < n; i++)
                    nb_in[k][i] = val(lt_rank, i, round + k);
                MPI_OK(MPI_Iallreduce(nb_in[k], nb_out[k], n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &q[k]));
            }
            for (int k = 2; k >= 0; k--)
                MPI_OK(MPI_Wait(&q[k], MPI_STATUS_IGNORE));
            for (int k = 0; k < 3; k++)
                for (int i = 0; i < n; i++)
                    CHECK(nb_out[k][i] == sum(i, round + k), "iallreduce %d n=%d [%d]: %ld", k, n, i, nb_out[k][i]);

            if (n <= 8192) {
                MPI_OK(MPI_Allgather(in, n, MPI_LONG, all, n, MPI_LONG, MPI_COMM_WORLD));
                for (int r = 0; r < lt_size; r++)
                    for (int i = 0; i < n; i++)
                        CHECK(all[(long)r * n + i] == val(r, i, round), "allgather n=%d from %d [%d]", n, r, i);
            }
        }
    }
    for (int k = 0; k < 3; k++) {
        free(nb_in[k]);
        free(nb_out[k]);
    }
    free(all);
    free(in);
    free(out);
    return lt_finish();
}
