// The MPI-2 C++ classes of MPICH's libmpichcxx.so.12 on top of Lanai: basic
// calls, a non-commutative user op, and a user error handler, all going
// through MPICH's C++ call-through functions.
#include <mpi.h>
#include <cstdio>

static const long P = 1000003;
static int handled = 0, handled_code = 0;

static void fail(int rank, const char *what, long got, long want) {
    std::printf("FAIL cxx_classes: rank %d: %s: got %ld, want %ld\n", rank, what, got, want);
    std::fflush(stdout);
    MPI::COMM_WORLD.Abort(1);
}

// Each pair of ints is the map t -> a*t + b (mod P); in is the lower
// ranks' map, so the result applies it first: associative, not commutative.
static void compose(const void *in, void *inout, int len, const MPI::Datatype &) {
    const int *f = static_cast<const int *>(in);
    int *g = static_cast<int *>(inout);
    for (int i = 0; i + 1 < len; i += 2) {
        long a = (long)g[i] * f[i] % P, b = ((long)g[i] * f[i + 1] + g[i + 1]) % P;
        g[i] = (int)a;
        g[i + 1] = (int)b;
    }
}

static void on_error(MPI::Comm &, int *code, ...) {
    handled++;
    handled_code = *code;
}

int main(int argc, char **argv) {
    MPI::Init(argc, argv);
    int r = MPI::COMM_WORLD.Get_rank(), n = MPI::COMM_WORLD.Get_size();

    int s = 0, one = r + 1;
    MPI::COMM_WORLD.Allreduce(&one, &s, 1, MPI::INT, MPI::SUM);
    if (s != n * (n + 1) / 2) fail(r, "Allreduce SUM", s, n * (n + 1) / 2);

    MPI::Op op;
    op.Init(compose, false);
    int mine[2] = {2 + r, 7 * r + 1}, got[2] = {0, 0};
    MPI::COMM_WORLD.Allreduce(mine, got, 2, MPI::INT, op);
    long a = 1, b = 0;  // the identity map, then each rank's in rank order
    for (int i = 0; i < n; i++) {
        long fa = 2 + i, fb = 7 * i + 1;
        long na = fa * a % P, nb = (fa * b + fb) % P;
        a = na;
        b = nb;
    }
    if (got[0] != a) fail(r, "user op, slope", got[0], a);
    if (got[1] != b) fail(r, "user op, offset", got[1], b);
    op.Free();

    MPI::Intracomm dup = MPI::COMM_WORLD.Dup();
    MPI::Errhandler eh = MPI::Comm::Create_errhandler(on_error);
    dup.Set_errhandler(eh);
    int v = 0;
    dup.Send(&v, 1, MPI::INT, n, 0);  // rank n does not exist
    if (handled != 1) fail(r, "error handler calls", handled, 1);
    if (MPI::Get_error_class(handled_code) != MPI::ERR_RANK)
        fail(r, "error class", MPI::Get_error_class(handled_code), MPI::ERR_RANK);
    eh.Free();
    dup.Free();

    MPI::COMM_WORLD.Barrier();
    if (r == 0) std::printf("PASS cxx_classes\n");
    MPI::Finalize();
    return 0;
}
