/* Reductions on long double (x87 extended precision): sums, products,
 * max/min, the complex type and MAXLOC/MINLOC on MPI_LONG_DOUBLE_INT. The
 * values are integers chosen so every partial result is exact in extended
 * precision (whatever the combine order) but not in double: 2^62 + rank. */
#include "lt.h"
#include <complex.h>

int main(int argc, char **argv)
{
    long double big = 4611686018427387904.0L; /* 2^62 */
    long double mine, sum, prod, mx, mn, want_sum = 0, want_prod = 1;
    long double _Complex z, zprod, want_z = 1;
    struct { long double v; int i; } in, out;
    int r;
    lt_init("long_double", &argc, &argv);

    mine = big + lt_rank;
    for (r = 0; r < lt_size; r++)
        want_sum += big + r;
    MPI_OK(MPI_Allreduce(&mine, &sum, 1, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == want_sum, "sum of 2^62 + rank: got %Lf want %Lf", sum, want_sum);
    CHECK(sizeof(long double) == 16, "x86-64 long double");

    mine = (long double)(lt_rank % 3 + 1);
    for (r = 0; r < lt_size; r++)
        want_prod *= (long double)(r % 3 + 1);
    MPI_OK(MPI_Allreduce(&mine, &prod, 1, MPI_LONG_DOUBLE, MPI_PROD, MPI_COMM_WORLD));
    CHECK(prod == want_prod, "product: got %Lf want %Lf", prod, want_prod);

    mine = big + (lt_rank * 7) % lt_size;
    MPI_OK(MPI_Allreduce(&mine, &mx, 1, MPI_LONG_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    MPI_OK(MPI_Allreduce(&mine, &mn, 1, MPI_LONG_DOUBLE, MPI_MIN, MPI_COMM_WORLD));
    CHECK(mx == big + (lt_size - 1), "max: got %Lf", mx);
    CHECK(mn == big, "min: got %Lf", mn);

    z = (long double)(lt_rank % 2 + 1) + (long double)(lt_rank % 2) * I;
    for (r = 0; r < lt_size; r++)
        want_z *= (long double)(r % 2 + 1) + (long double)(r % 2) * I;
    MPI_OK(MPI_Allreduce(&z, &zprod, 1, MPI_C_LONG_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD));
    CHECK(creall(zprod) == creall(want_z) && cimagl(zprod) == cimagl(want_z),
          "complex product: got %Lf%+Lfi want %Lf%+Lfi", creall(zprod), cimagl(zprod),
          creall(want_z), cimagl(want_z));

    /* Ties on the value: the lowest index wins. */
    in.v = big + (lt_rank % 2);
    in.i = lt_rank;
    MPI_OK(MPI_Allreduce(&in, &out, 1, MPI_LONG_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD));
    CHECK(out.v == big + (lt_size > 1 ? 1 : 0) && out.i == (lt_size > 1 ? 1 : 0),
          "maxloc: got %Lf at %d", out.v, out.i);
    MPI_OK(MPI_Allreduce(&in, &out, 1, MPI_LONG_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD));
    CHECK(out.v == big && out.i == 0, "minloc: got %Lf at %d", out.v, out.i);

    /* Reduce to every root and Reduce_local agree with the above. */
    for (r = 0; r < lt_size; r++) {
        long double s = 0;
        mine = big + lt_rank;
        MPI_OK(MPI_Reduce(&mine, &s, 1, MPI_LONG_DOUBLE, MPI_SUM, r, MPI_COMM_WORLD));
        if (lt_rank == r)
            CHECK(s == want_sum, "reduce to %d", r);
    }
    {
        long double a[2] = {1.5L, big}, b[2] = {2.0L, 1.0L};
        MPI_OK(MPI_Reduce_local(a, b, 2, MPI_LONG_DOUBLE, MPI_SUM));
        CHECK(b[0] == 3.5L && b[1] == big + 1, "reduce_local");
    }
    return lt_finish();
}
