/* Collective latency: usage: collectives barrier|allreduce|reduce [bytes] [iters]
 * prints "<name> <ranks> <bytes> <usec per call>" (the maximum over ranks). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *what = argc > 1 ? argv[1] : "barrier";
    int bytes = argc > 2 ? atoi(argv[2]) : 8;
    int iters = argc > 3 ? atoi(argv[3]) : 2000;
    int count = bytes / 8 > 0 ? bytes / 8 : 1;
    double *in = calloc(count, sizeof(double)), *out = calloc(count, sizeof(double));
    double t = 0;
    for (int pass = 0; pass < 2; pass++) {
        int n = pass == 0 ? iters / 10 + 1 : iters;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < n; i++) {
            if (!strcmp(what, "barrier")) MPI_Barrier(MPI_COMM_WORLD);
            else if (!strcmp(what, "allreduce")) MPI_Allreduce(in, out, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            else MPI_Reduce(in, out, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        }
        t = (MPI_Wtime() - t0) * 1e6 / n;
    }
    double tmax = 0;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%s %d %d %.3f\n", what, size, !strcmp(what, "barrier") ? 0 : bytes, tmax);
    free(in); free(out);
    MPI_Finalize();
    return 0;
}
