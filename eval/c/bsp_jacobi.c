/* bsp_jacobi: a bulk-synchronous stand-in for seed 002's Abinit run.
 *
 * usage: bsp_jacobi [nx] [ny] [iters] [verify]
 *   nx, ny  global grid columns and rows, boundary included (default 512 512)
 *   iters   Jacobi sweeps (default 200)
 *   verify  1 (default): rank 0 repeats the computation serially and the
 *           gathered distributed grid must be bitwise equal; 0: skip it
 *
 * 2-D heat diffusion, 5-point Jacobi stencil. Fixed boundary: the top row is
 * 100.0, the other three edges 0.0, the interior starts at 0.0. The ny-2
 * interior rows are split in contiguous row blocks over the ranks (the first
 * (ny-2) % P ranks get one row more). Every iteration: halo exchange with the
 * rank above and below (MPI_Sendrecv), one sweep, one MPI_Barrier.
 *
 * Timing (the iteration loop only, after a barrier):
 *   total_s        wall time of the loop, maximum over ranks
 *   mpi_avg_s      time inside MPI calls in the loop, mean over ranks
 *   mpi_max_s      the same, maximum over ranks
 *   barrier_avg_s  the MPI_Barrier share of mpi_avg_s (mean over ranks)
 *   halo_avg_s     the MPI_Sendrecv share of mpi_avg_s (mean over ranks)
 *   wait_avg_s     the part of each rank's barrier before the last rank
 *                  arrived (mean over ranks): no barrier algorithm can
 *                  shorten it
 *   release_avg_s  the part after the last arrival (mean over ranks): what
 *                  the barrier itself costs
 *   wait_med_us, release_med_us  the medians over barriers of the same two
 *                  (mean over ranks per barrier), in us: a mean far above
 *                  its median comes from a few long stalls
 *   early          barriers that some rank left before the last one entered
 *                  (must be 0)
 *   last           per rank, how many barriers it entered last
 * Each MPI call in the loop is bracketed with MPI_Wtime. The barrier's two
 * parts come from CLOCK_MONOTONIC stamps around every MPI_Barrier, compared
 * across ranks, so they hold only when every rank runs on one host.
 *
 * Output, one line from rank 0:
 *   bsp ranks=P nx=.. ny=.. iters=.. total_s=.. mpi_avg_s=.. mpi_max_s=..
 *       barrier_avg_s=.. halo_avg_s=.. wait_avg_s=.. release_avg_s=..
 *       wait_med_us=.. release_med_us=.. early=.. last=n0,n1,..
 *       checksum=.. result=PASS|FAIL|UNCHECKED
 * checksum is the sum of the gathered grid in row-major order. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOP 100.0

/* One sweep over rows 1..rows of a (rows+2) x nx block: v from u.
 * Shared by the distributed and the serial computation, so both evaluate
 * exactly the same expression for every point. */
static void sweep(int rows, int nx, const double *u, double *v) {
    for (int i = 1; i <= rows; i++) {
        const double *up = u + (size_t)(i - 1) * nx;
        const double *mid = u + (size_t)i * nx;
        const double *dn = u + (size_t)(i + 1) * nx;
        double *out = v + (size_t)i * nx;
        for (int j = 1; j < nx - 1; j++)
            out[j] = 0.25 * (((up[j] + dn[j]) + mid[j - 1]) + mid[j + 1]);
    }
}

/* A clock that every process of a host shares (MPI_Wtime need not be). */
static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double *doubles(size_t n) {
    double *a = malloc((n ? n : 1) * sizeof(double));
    if (!a) {
        fprintf(stderr, "bsp_jacobi: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return a;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of a[0..n) (sorts a). */
static double median(double *a, int n) {
    if (n == 0) return 0;
    qsort(a, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? a[n / 2] : 0.5 * (a[n / 2 - 1] + a[n / 2]);
}

/* A (rows+2) x nx block, zeroed; row 0 set to TOP when it is the global top. */
static double *block(int rows, int nx, int top) {
    double *a = calloc((size_t)(rows + 2) * nx, sizeof(double));
    if (!a) {
        fprintf(stderr, "bsp_jacobi: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (top)
        for (int j = 0; j < nx; j++) a[j] = TOP;
    return a;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int nx = argc > 1 ? atoi(argv[1]) : 512;
    int ny = argc > 2 ? atoi(argv[2]) : 512;
    int iters = argc > 3 ? atoi(argv[3]) : 200;
    int verify = argc > 4 ? atoi(argv[4]) : 1;
    int inner = ny - 2;
    if (nx < 3 || inner < size || iters < 0) {
        if (rank == 0)
            fprintf(stderr, "bsp_jacobi: need nx >= 3, ny - 2 >= ranks (%d), iters >= 0\n", size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    /* Row block of this rank: `rows` interior rows, below those of lower ranks. */
    int base = inner / size, rem = inner % size;
    int rows = base + (rank < rem);
    int upper = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    int lower = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    double *u = block(rows, nx, rank == 0), *v = block(rows, nx, rank == 0);

    double t_halo = 0, t_bar = 0, t, t0, t1;
    /* When this rank entered and left each iteration's barrier. */
    double *enter = doubles((size_t)iters), *leave = doubles((size_t)iters);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        /* Halo rows 0 and rows+1; with MPI_PROC_NULL the global boundary
         * row stays as it is. */
        t = MPI_Wtime();
        MPI_Sendrecv(u + (size_t)1 * nx, nx, MPI_DOUBLE, upper, 1,
                     u + (size_t)(rows + 1) * nx, nx, MPI_DOUBLE, lower, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(u + (size_t)rows * nx, nx, MPI_DOUBLE, lower, 2,
                     u, nx, MPI_DOUBLE, upper, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        t_halo += MPI_Wtime() - t;
        sweep(rows, nx, u, v);
        double *w = u; u = v; v = w;
        enter[it] = mono();
        t = MPI_Wtime();
        MPI_Barrier(MPI_COMM_WORLD);
        t_bar += MPI_Wtime() - t;
        leave[it] = mono();
    }
    t1 = MPI_Wtime();

    double mine[3] = {t_halo + t_bar, t_bar, t_halo}, sum[3], mx[2];
    double local[2] = {t1 - t0, t_halo + t_bar};
    MPI_Reduce(mine, sum, 3, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(local, mx, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    /* Every rank's stamps, on rank 0: per barrier, wait = last entry - mean
     * entry and release = mean exit - last entry. */
    double *all_in = NULL, *all_out = NULL;
    if (rank == 0) {
        all_in = doubles((size_t)iters * size);
        all_out = doubles((size_t)iters * size);
    }
    MPI_Gather(enter, iters, MPI_DOUBLE, all_in, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(leave, iters, MPI_DOUBLE, all_out, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    double wait = 0, release = 0, wait_med = 0, release_med = 0;
    long early = 0;
    long *last = NULL; /* barriers each rank entered last */
    if (rank == 0) {
        double *w = doubles((size_t)iters), *r = doubles((size_t)iters);
        last = calloc((size_t)size, sizeof(long));
        if (!last) MPI_Abort(MPI_COMM_WORLD, 2);
        for (int it = 0; it < iters; it++) {
            double in_max = all_in[it], in_sum = 0, out_min = all_out[it], out_sum = 0;
            int who = 0;
            for (int p = 0; p < size; p++) {
                double a = all_in[(size_t)p * iters + it], b = all_out[(size_t)p * iters + it];
                if (a > in_max) {
                    in_max = a;
                    who = p;
                }
                if (b < out_min) out_min = b;
                in_sum += a;
                out_sum += b;
            }
            w[it] = in_max - in_sum / size;
            r[it] = out_sum / size - in_max;
            wait += w[it];
            release += r[it];
            early += out_min < in_max;
            last[who]++;
        }
        wait_med = median(w, iters);
        release_med = median(r, iters);
        free(w);
        free(r);
    }

    /* Gather the interior rows to rank 0 in row order. */
    int *counts = NULL, *displs = NULL;
    double *grid = NULL;
    if (rank == 0) {
        counts = malloc(size * sizeof(int));
        displs = malloc(size * sizeof(int));
        for (int r = 0, off = 0; r < size; r++) {
            counts[r] = (base + (r < rem)) * nx;
            displs[r] = off;
            off += counts[r];
        }
        grid = block(inner, nx, 1); /* full ny x nx grid, boundary included */
    }
    MPI_Gatherv(u + nx, rows * nx, MPI_DOUBLE, grid ? grid + nx : NULL, counts, displs,
                MPI_DOUBLE, 0, MPI_COMM_WORLD);

    if (rank == 0) {
        double checksum = 0;
        for (size_t k = 0; k < (size_t)ny * nx; k++) checksum += grid[k];
        const char *result = "UNCHECKED";
        if (verify) {
            double *a = block(inner, nx, 1), *b = block(inner, nx, 1);
            for (int it = 0; it < iters; it++) {
                sweep(inner, nx, a, b);
                double *w = a; a = b; b = w;
            }
            result = memcmp(a, grid, (size_t)ny * nx * sizeof(double)) ? "FAIL" : "PASS";
            free(a);
            free(b);
        }
        printf("bsp ranks=%d nx=%d ny=%d iters=%d total_s=%.6f mpi_avg_s=%.6f mpi_max_s=%.6f "
               "barrier_avg_s=%.6f halo_avg_s=%.6f wait_avg_s=%.6f release_avg_s=%.6f "
               "wait_med_us=%.3f release_med_us=%.3f early=%ld last=",
               size, nx, ny, iters, mx[0], sum[0] / size, mx[1], sum[1] / size, sum[2] / size,
               wait, release, wait_med * 1e6, release_med * 1e6, early);
        for (int p = 0; p < size; p++) printf("%s%ld", p ? "," : "", last[p]);
        printf(" checksum=%.17g result=%s\n", checksum, result);
        fflush(stdout);
        free(grid);
        free(counts);
        free(displs);
    }
    free(all_in);
    free(all_out);
    free(last);
    free(enter);
    free(leave);
    free(u);
    free(v);
    MPI_Finalize();
    return 0;
}
