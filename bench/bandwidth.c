/* OSU-style bandwidth: rank 0 streams a window of Isends to rank 1, which
 * acknowledges each window. usage: bandwidth [bytes...]
 * prints "bandwidth <bytes> <MB/s>" (MB = 1e6 bytes). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define WINDOW 64

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0) fprintf(stderr, "bandwidth needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int sizes[32], n = 0;
    for (int i = 1; i < argc && n < 32; i++) sizes[n++] = atoi(argv[i]);
    if (n == 0) { sizes[0] = 1 << 20; sizes[1] = 1 << 24; n = 2; }
    MPI_Request req[WINDOW];
    for (int k = 0; k < n; k++) {
        int bytes = sizes[k];
        int window = bytes >= (1 << 24) ? 4 : WINDOW;
        char *buf = malloc((size_t)bytes * window);
        for (size_t i = 0; i < (size_t)bytes * window; i++) buf[i] = (char)i;
        int iters = bytes >= (1 << 24) ? 10 : 40;
        double t0 = 0;
        for (int it = -2; it < iters; it++) {
            if (it == 0) { MPI_Barrier(MPI_COMM_WORLD); t0 = MPI_Wtime(); }
            if (rank == 0) {
                for (int w = 0; w < window; w++)
                    MPI_Isend(buf + (size_t)w * bytes, bytes, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &req[w]);
                MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
                MPI_Recv(NULL, 0, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                for (int w = 0; w < window; w++)
                    MPI_Irecv(buf + (size_t)w * bytes, bytes, MPI_CHAR, 0, 2, MPI_COMM_WORLD, &req[w]);
                MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
                MPI_Send(NULL, 0, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
            }
        }
        double secs = MPI_Wtime() - t0;
        if (rank == 0) printf("bandwidth %d %.1f\n", bytes, (double)bytes * window * iters / secs / 1e6);
        free(buf);
    }
    MPI_Finalize();
    return 0;
}
