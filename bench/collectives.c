/* Collective latency: usage: collectives WHAT [bytes] [iters], where WHAT is
 * barrier, allreduce, reduce, bcast, gather, scatter, allgather, alltoall,
 * reduce_scatter (the block form), scan or exscan, or gatherv, scatterv or
 * allgatherv with equal counts; `bytes` is what each rank contributes or
 * receives per peer (doubles; at least one).
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
    /* Room for one block per rank, for the rooted and all-to-all forms. */
    double *in = calloc((size_t)count * size, sizeof(double));
    double *out = calloc((size_t)count * size, sizeof(double));
    MPI_Comm w = MPI_COMM_WORLD;
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    for (int r = 0; r < size; r++)
        counts[r] = count, displs[r] = r * count;
    double t = 0;
    for (int pass = 0; pass < 2; pass++) {
        int n = pass == 0 ? iters / 10 + 1 : iters;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < n; i++) {
            if (!strcmp(what, "barrier")) MPI_Barrier(w);
            else if (!strcmp(what, "allreduce")) MPI_Allreduce(in, out, count, MPI_DOUBLE, MPI_SUM, w);
            else if (!strcmp(what, "reduce")) MPI_Reduce(in, out, count, MPI_DOUBLE, MPI_SUM, 0, w);
            else if (!strcmp(what, "bcast")) MPI_Bcast(in, count, MPI_DOUBLE, 0, w);
            else if (!strcmp(what, "gather")) MPI_Gather(in, count, MPI_DOUBLE, out, count, MPI_DOUBLE, 0, w);
            else if (!strcmp(what, "scatter")) MPI_Scatter(in, count, MPI_DOUBLE, out, count, MPI_DOUBLE, 0, w);
            else if (!strcmp(what, "allgather")) MPI_Allgather(in, count, MPI_DOUBLE, out, count, MPI_DOUBLE, w);
            else if (!strcmp(what, "gatherv")) MPI_Gatherv(in, count, MPI_DOUBLE, out, counts, displs, MPI_DOUBLE, 0, w);
            else if (!strcmp(what, "scatterv")) MPI_Scatterv(in, counts, displs, MPI_DOUBLE, out, count, MPI_DOUBLE, 0, w);
            else if (!strcmp(what, "allgatherv")) MPI_Allgatherv(in, count, MPI_DOUBLE, out, counts, displs, MPI_DOUBLE, w);
            else if (!strcmp(what, "alltoall")) MPI_Alltoall(in, count, MPI_DOUBLE, out, count, MPI_DOUBLE, w);
            else if (!strcmp(what, "reduce_scatter")) MPI_Reduce_scatter_block(in, out, count, MPI_DOUBLE, MPI_SUM, w);
            else if (!strcmp(what, "scan")) MPI_Scan(in, out, count, MPI_DOUBLE, MPI_SUM, w);
            else if (!strcmp(what, "exscan")) MPI_Exscan(in, out, count, MPI_DOUBLE, MPI_SUM, w);
            else {
                if (rank == 0) fprintf(stderr, "collectives: unknown collective %s\n", what);
                MPI_Abort(w, 2);
            }
        }
        t = (MPI_Wtime() - t0) * 1e6 / n;
    }
    double tmax = 0;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%s %d %d %.3f\n", what, size, !strcmp(what, "barrier") ? 0 : bytes, tmax);
    free(in); free(out); free(counts); free(displs);
    MPI_Finalize();
    return 0;
}
