/* Hello world plus resident memory. After MPI_Init and a barrier each rank
 * reads VmRSS from /proc/self/status; rank 0 prints "hello <ranks>" and
 * "rss <ranks> <max KiB> <mean KiB>". bench/compare times the whole job
 * around the launcher, so keep the work here small. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

/* VmRSS in KiB, or -1 when /proc is unavailable. */
static double vm_rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    double kib = -1;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "VmRSS:", 6)) {
            sscanf(line + 6, "%lf", &kib);
            break;
        }
    }
    fclose(f);
    return kib;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    double rss = vm_rss_kib(), max = 0, sum = 0;
    MPI_Reduce(&rss, &max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&rss, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("hello %d\n", size);
        printf("rss %d %.0f %.0f\n", size, max, sum / size);
        fflush(stdout);
    }
    MPI_Finalize();
    return 0;
}
