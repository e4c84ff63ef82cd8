/* Persistent neighbour collectives (MPI 4): MPI_Neighbor_*_init on a
 * periodic 1-D Cartesian ring, each started three times with new data and
 * checked against the neighbours' values computed locally; one Startall
 * over all five; init on a communicator without a topology must fail with
 * MPI_ERR_TOPOLOGY (under MPI_ERRORS_RETURN). */
#include "lt.h"

static int val(int r, int round, int k) { return 1000 * round + 10 * r + k; }

int main(int argc, char **argv) {
    lt_init("neighbor_persistent", &argc, &argv);
    int rank = lt_rank, size = lt_size;
    int dims[1] = {size}, periods[1] = {1};
    MPI_Comm ring;
    MPI_OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
    int left = (rank - 1 + size) % size, right = (rank + 1) % size;

    int ag_s, ag_r[2], agv_r[2], a2a_s[2], a2a_r[2], a2av_s[2], a2av_r[2], a2aw_s[2], a2aw_r[2];
    int ones[2] = {1, 1}, displs[2] = {0, 1};
    MPI_Aint bdispls[2] = {0, sizeof(int)};
    MPI_Datatype types[2] = {MPI_INT, MPI_INT};
    MPI_Request q[5];
    MPI_OK(MPI_Neighbor_allgather_init(&ag_s, 1, MPI_INT, ag_r, 1, MPI_INT, ring, MPI_INFO_NULL, &q[0]));
    MPI_OK(MPI_Neighbor_allgatherv_init(&ag_s, 1, MPI_INT, agv_r, ones, displs, MPI_INT, ring,
                                        MPI_INFO_NULL, &q[1]));
    MPI_OK(MPI_Neighbor_alltoall_init(a2a_s, 1, MPI_INT, a2a_r, 1, MPI_INT, ring, MPI_INFO_NULL, &q[2]));
    MPI_OK(MPI_Neighbor_alltoallv_init(a2av_s, ones, displs, MPI_INT, a2av_r, ones, displs, MPI_INT,
                                       ring, MPI_INFO_NULL, &q[3]));
    MPI_OK(MPI_Neighbor_alltoallw_init(a2aw_s, ones, bdispls, types, a2aw_r, ones, bdispls, types,
                                       ring, MPI_INFO_NULL, &q[4]));
    for (int round = 0; round < 4; round++) {
        ag_s = val(rank, round, 0);
        for (int k = 0; k < 2; k++) {
            a2a_s[k] = val(rank, round, 1 + k);
            a2av_s[k] = val(rank, round, 3 + k);
            a2aw_s[k] = val(rank, round, 5 + k);
            ag_r[k] = agv_r[k] = a2a_r[k] = a2av_r[k] = a2aw_r[k] = -1;
        }
        if (round < 3) {
            for (int i = 0; i < 5; i++) {
                MPI_OK(MPI_Start(&q[i]));
                MPI_OK(MPI_Wait(&q[i], MPI_STATUS_IGNORE));
            }
        } else {
            MPI_OK(MPI_Startall(5, q));
            MPI_OK(MPI_Waitall(5, q, MPI_STATUSES_IGNORE));
        }
        /* Neighbour 0 is the left one (-1 shift), neighbour 1 the right. */
        CHECK(ag_r[0] == val(left, round, 0) && ag_r[1] == val(right, round, 0),
              "round %d allgather got %d %d", round, ag_r[0], ag_r[1]);
        CHECK(agv_r[0] == val(left, round, 0) && agv_r[1] == val(right, round, 0),
              "round %d allgatherv got %d %d", round, agv_r[0], agv_r[1]);
        /* What the left neighbour sends to its right, and the right to its left. */
        CHECK(a2a_r[0] == val(left, round, 2) && a2a_r[1] == val(right, round, 1),
              "round %d alltoall got %d %d", round, a2a_r[0], a2a_r[1]);
        CHECK(a2av_r[0] == val(left, round, 4) && a2av_r[1] == val(right, round, 3),
              "round %d alltoallv got %d %d", round, a2av_r[0], a2av_r[1]);
        CHECK(a2aw_r[0] == val(left, round, 6) && a2aw_r[1] == val(right, round, 5),
              "round %d alltoallw got %d %d", round, a2aw_r[0], a2aw_r[1]);
    }
    for (int i = 0; i < 5; i++)
        MPI_OK(MPI_Request_free(&q[i]));

    MPI_Comm plain;
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &plain));
    MPI_OK(MPI_Comm_set_errhandler(plain, MPI_ERRORS_RETURN));
    MPI_Request bad;
    int rc = MPI_Neighbor_allgather_init(&ag_s, 1, MPI_INT, ag_r, 1, MPI_INT, plain, MPI_INFO_NULL, &bad);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TOPOLOGY, "init without a topology gave class %d", cls);
    MPI_OK(MPI_Comm_free(&plain));
    MPI_OK(MPI_Comm_free(&ring));
    return lt_finish();
}
