/* pingpong: one-way latency of a 0-byte message between ranks 0 and 1
 * (the `l` of lanai-eval barrier-model's tree prediction).
 *
 * usage: pingpong [batches] [iters]
 *   batches  timed batches to run (default 5)
 *   iters    round trips per batch (default 2000)
 *
 * Ranks 0 and 1 bounce an empty message back and forth (MPI_Send and
 * MPI_Recv, tag 0); other ranks only take part in the barriers. After a
 * warm-up of iters/10 round trips, rank 0 prints, per batch:
 *   pingpong_us <half the mean round trip, us> */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void bounce(int rank, long n) {
    for (long i = 0; i < n; i++) {
        if (rank == 0) {
            MPI_Send(NULL, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(NULL, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(NULL, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(NULL, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int batches = argc > 1 ? atoi(argv[1]) : 5;
    long iters = argc > 2 ? atol(argv[2]) : 2000;
    if (batches < 1) batches = 1;
    if (iters < 1) iters = 1;
    if (size < 2) {
        if (rank == 0) fprintf(stderr, "pingpong: needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    bounce(rank, iters / 10 + 1);
    for (int b = 0; b < batches; b++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        bounce(rank, iters);
        double us = (MPI_Wtime() - t0) * 1e6 / (double)iters / 2.0;
        if (rank == 0) {
            printf("pingpong_us %.4f\n", us);
            fflush(stdout);
        }
    }
    MPI_Finalize();
    return 0;
}
