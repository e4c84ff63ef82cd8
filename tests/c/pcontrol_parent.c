/*
 * MPI_Pcontrol (a no-op without a profiling layer, with any level and
 * extra arguments) and MPI_Comm_get_parent (MPI_COMM_NULL in a process
 * that was not spawned).
 */
#include "lt.h"

int main(int argc, char **argv)
{
    lt_init("pcontrol_parent", &argc, &argv);
    MPI_Comm parent = MPI_COMM_WORLD;
    int x = 1;

    MPI_OK(MPI_Pcontrol(0));
    MPI_OK(MPI_Pcontrol(1));
    MPI_OK(MPI_Pcontrol(2, "phase", 3.5, &x));
    MPI_OK(MPI_Pcontrol(-7));

    MPI_OK(MPI_Comm_get_parent(&parent));
    CHECK(parent == MPI_COMM_NULL, "parent 0x%x, want MPI_COMM_NULL", (unsigned)parent);

    /* Still a working library afterwards. */
    int s = lt_rank, r = -1;
    MPI_OK(MPI_Sendrecv(&s, 1, MPI_INT, lt_next(), 3, &r, 1, MPI_INT, lt_prev(), 3, MPI_COMM_WORLD,
                        MPI_STATUS_IGNORE));
    CHECK(r == lt_prev(), "ring got %d", r);
    return lt_finish();
}
