/* MPI_Init wall time. Each rank reads CLOCK_REALTIME just before and just
 * after MPI_Init; rank 0 prints "init <ranks> <max usec> <mean usec>" over
 * all ranks. Process start-up by the launcher is not included (hello.c's
 * whole-job wall time, measured by bench/compare, covers that). */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static double now_usec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
    double t0 = now_usec();
    MPI_Init(&argc, &argv);
    double elapsed = now_usec() - t0;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double max = 0, sum = 0;
    MPI_Reduce(&elapsed, &max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&elapsed, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("init %d %.1f %.1f\n", size, max, sum / size);
        fflush(stdout);
    }
    MPI_Finalize();
    return 0;
}
