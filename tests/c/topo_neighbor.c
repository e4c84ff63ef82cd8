/*
 * Neighbour collectives on Cartesian grids: a 2D periodic grid (dims from
 * Dims_create), a non-periodic one (MPI_PROC_NULL neighbours leave their
 * receive blocks alone) and a periodic ring. Every block is checked by
 * value: the block a neighbour sent towards direction j arrives in the
 * receiver's slot for the opposite direction (j ^ 1).
 */
#include "lt.h"

static int val(int q, int j, int i) { return q * 1000 + j * 100 + i; }

/* Degenerate periodic dimensions (extent 1 or 2) where both neighbours are
 * one process: MPICH matches those blocks in posting order, not by
 * direction, so only Lanai is held to the standard there. */
static int degenerate(int nd, const int *dims, const int *per)
{
    for (int d = 0; d < nd; d++)
        if (per[d] && dims[d] <= 2)
            return 1;
    return 0;
}

static void run(int nd, const int *dims, const int *per)
{
    int me = lt_rank, deg = 2 * nd;
    MPI_Comm cart;
    MPI_OK(MPI_Cart_create(MPI_COMM_WORLD, nd, dims, per, 0, &cart));
    int nb[6];
    for (int d = 0; d < nd; d++)
        MPI_OK(MPI_Cart_shift(cart, d, 1, &nb[2 * d], &nb[2 * d + 1]));
    int strict = !(degenerate(nd, dims, per) && lt_running_on_mpich());

    /* allgather: 3 ints from every neighbour. */
    int s[64], r[64];
    for (int i = 0; i < 3; i++)
        s[i] = val(me, 0, i);
    for (int i = 0; i < 64; i++)
        r[i] = -1;
    MPI_OK(MPI_Neighbor_allgather(s, 3, MPI_INT, r, 3, MPI_INT, cart));
    for (int j = 0; j < deg; j++)
        for (int i = 0; i < 3; i++) {
            int want = nb[j] == MPI_PROC_NULL ? -1 : val(nb[j], 0, i);
            CHECK(r[3 * j + i] == want, "allgather nd %d slot %d [%d] = %d want %d",
                  nd, j, i, r[3 * j + i], want);
        }

    /* alltoall: block j goes towards direction j. */
    for (int j = 0; j < deg; j++)
        for (int i = 0; i < 2; i++)
            s[2 * j + i] = val(me, j, i);
    for (int i = 0; i < 64; i++)
        r[i] = -1;
    MPI_OK(MPI_Neighbor_alltoall(s, 2, MPI_INT, r, 2, MPI_INT, cart));
    for (int j = 0; j < deg; j++)
        for (int i = 0; i < 2; i++) {
            int want = nb[j] == MPI_PROC_NULL ? -1 : val(nb[j], j ^ 1, i);
            if (strict || nb[j] == MPI_PROC_NULL)
                CHECK(r[2 * j + i] == want, "alltoall nd %d slot %d [%d] = %d want %d",
                      nd, j, i, r[2 * j + i], want);
        }

    /* allgatherv: blocks in reverse order with gaps that stay untouched. */
    int rc[6], dsp[6];
    for (int j = 0; j < deg; j++) {
        rc[j] = 2;
        dsp[j] = (deg - 1 - j) * 4;
    }
    for (int i = 0; i < 64; i++)
        r[i] = -1;
    MPI_OK(MPI_Neighbor_allgatherv(s, 2, MPI_INT, r, rc, dsp, MPI_INT, cart));
    for (int j = 0; j < deg; j++) {
        for (int i = 0; i < 2; i++) {
            int want = nb[j] == MPI_PROC_NULL ? -1 : val(nb[j], 0, i);
            CHECK(r[dsp[j] + i] == want, "allgatherv slot %d [%d] = %d want %d", j, i,
                  r[dsp[j] + i], want);
        }
        CHECK(r[dsp[j] + 2] == -1 && r[dsp[j] + 3] == -1, "allgatherv wrote a gap");
    }

    /* alltoallv: the block towards direction j has j + 1 ints. */
    int sc[6], sd[6], rcv[6], rd[6];
    for (int j = 0; j < deg; j++) {
        sc[j] = j + 1;
        sd[j] = j * 8;
        rcv[j] = (j ^ 1) + 1;
        rd[j] = (deg - 1 - j) * 8;
        for (int i = 0; i < sc[j]; i++)
            s[sd[j] + i] = val(me, j, i);
    }
    for (int i = 0; i < 64; i++)
        r[i] = -1;
    MPI_OK(MPI_Neighbor_alltoallv(s, sc, sd, MPI_INT, r, rcv, rd, MPI_INT, cart));
    if (strict)
        for (int j = 0; j < deg; j++) {
            for (int i = 0; i < rcv[j]; i++) {
                int want = nb[j] == MPI_PROC_NULL ? -1 : val(nb[j], j ^ 1, i);
                CHECK(r[rd[j] + i] == want, "alltoallv slot %d [%d] = %d want %d", j,
                      i, r[rd[j] + i], want);
            }
            CHECK(r[rd[j] + rcv[j]] == -1, "alltoallv wrote past slot %d", j);
        }

    /* alltoallw: dimension 0 carries doubles, the others ints. */
    {
        char sbuf[512], rbuf[512];
        int wc[6];
        MPI_Aint wsd[6], wrd[6];
        MPI_Datatype wt[6];
        for (int j = 0; j < deg; j++) {
            wc[j] = 2;
            wt[j] = j < 2 ? MPI_DOUBLE : MPI_INT;
            wsd[j] = j * 16;
            wrd[j] = (deg - 1 - j) * 16 + 8;
            for (int i = 0; i < 2; i++) {
                if (j < 2)
                    ((double *)(sbuf + wsd[j]))[i] = val(me, j, i) + 0.5;
                else
                    ((int *)(sbuf + wsd[j]))[i] = val(me, j, i);
            }
        }
        memset(rbuf, 0x7f, sizeof rbuf);
        MPI_OK(MPI_Neighbor_alltoallw(sbuf, wc, wsd, wt, rbuf, wc, wrd, wt, cart));
        for (int j = 0; j < deg && strict; j++) {
            if (nb[j] == MPI_PROC_NULL) {
                CHECK((unsigned char)rbuf[wrd[j]] == 0x7f, "alltoallw wrote a PROC_NULL slot");
                continue;
            }
            for (int i = 0; i < 2; i++) {
                double got, want = val(nb[j], j ^ 1, i) + (j < 2 ? 0.5 : 0);
                if (j < 2)
                    memcpy(&got, rbuf + wrd[j] + 8 * i, 8);
                else {
                    int g;
                    memcpy(&g, rbuf + wrd[j] + 4 * i, 4);
                    got = g;
                }
                CHECK(got == want, "alltoallw slot %d [%d] = %g want %g", j, i, got, want);
            }
        }
    }

    /* Two nonblocking exchanges at once, completed in reverse order. */
    {
        int s1[3], r1[18], s2[12], r2[12];
        MPI_Request rq[2];
        for (int i = 0; i < 3; i++)
            s1[i] = val(me, 5, i);
        for (int j = 0; j < deg; j++)
            for (int i = 0; i < 2; i++)
                s2[2 * j + i] = val(me, j, i + 10);
        for (int i = 0; i < 18; i++)
            r1[i] = -1;
        for (int i = 0; i < 12; i++)
            r2[i] = -1;
        MPI_OK(MPI_Ineighbor_allgather(s1, 3, MPI_INT, r1, 3, MPI_INT, cart, &rq[0]));
        MPI_OK(MPI_Ineighbor_alltoall(s2, 2, MPI_INT, r2, 2, MPI_INT, cart, &rq[1]));
        MPI_OK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
        MPI_OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
        for (int j = 0; j < deg; j++) {
            for (int i = 0; i < 3; i++) {
                int want = nb[j] == MPI_PROC_NULL ? -1 : val(nb[j], 5, i);
                CHECK(r1[3 * j + i] == want, "Ineighbor_allgather slot %d", j);
            }
            for (int i = 0; i < 2 && strict; i++) {
                int want = nb[j] == MPI_PROC_NULL ? -1 : val(nb[j], j ^ 1, i + 10);
                CHECK(r2[2 * j + i] == want, "Ineighbor_alltoall slot %d", j);
            }
        }
    }
    MPI_OK(MPI_Comm_free(&cart));
}

int main(int argc, char **argv)
{
    lt_init("topo_neighbor", &argc, &argv);
    int dims[2] = {0, 0}, per[2] = {1, 1}, np[2] = {0, 0};
    MPI_OK(MPI_Dims_create(lt_size, 2, dims));
    run(2, dims, per);
    run(2, dims, np);
    int ring[1] = {lt_size}, rp[1] = {1}, rn[1] = {0};
    run(1, ring, rp);
    run(1, ring, rn);
    int d3[3] = {0, 0, 0}, p3[3] = {1, 0, 1};
    MPI_OK(MPI_Dims_create(lt_size, 3, d3));
    run(3, d3, p3);
    /* Without a topology: MPI_ERR_TOPOLOGY. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int x = 0, y[8], cls = -1;
    int rc = MPI_Neighbor_allgather(&x, 1, MPI_INT, y, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_TOPOLOGY,
          "Neighbor_allgather on WORLD: class %d", cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    return lt_finish();
}
