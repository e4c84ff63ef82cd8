/* OSU-style ping-pong latency between ranks 0 and 1.
 * usage: latency [bytes...]   prints "latency <bytes> <usec one-way>" lines. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double run(int bytes, int iters, int rank, char *buf) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            MPI_Send(buf, bytes, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, bytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0) fprintf(stderr, "latency needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int sizes[32], n = 0;
    for (int i = 1; i < argc && n < 32; i++) sizes[n++] = atoi(argv[i]);
    if (n == 0) { sizes[0] = 0; sizes[1] = 8; sizes[2] = 1024; sizes[3] = 65536; n = 4; }
    char *buf = calloc(1, 1 << 24);
    for (int k = 0; k < n; k++) {
        int iters = sizes[k] >= 65536 ? 2000 : 20000;
        run(sizes[k], iters / 10, rank, buf); /* warm-up */
        double us = run(sizes[k], iters, rank, buf);
        if (rank == 0) printf("latency %d %.4f\n", sizes[k], us);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
