/* Several programs in one job (lanairun's ':' and Hydra's): every rank
 * checks what its own part of the command line gave it, and rank 0 prints
 * the layout it gathered for the runner to compare with the command line.
 *
 * usage: mpmd APPNUM ENV [WDIR]
 *   APPNUM  the MPI_APPNUM this rank's program must see
 *   ENV     LANAI_TEST_ENV's expected value, or "-" for unset
 *   WDIR    the working directory this rank must start in
 * Every rank must also see LANAI_TEST_G=g (a variable for the whole job).
 * Rank 0 prints "layout appnums=a,b,.. shared=s,t,..": each rank's
 * MPI_APPNUM and the size of its MPI_COMM_TYPE_SHARED communicator. */
#include "lt.h"

int main(int argc, char **argv)
{
    lt_init("mpmd", &argc, &argv);
    CHECK(argc >= 3, "usage: mpmd APPNUM ENV [WDIR] (got %d arguments)", argc - 1);
    int want_app = argc >= 3 ? atoi(argv[1]) : -1;
    const char *want_env = argc >= 3 ? argv[2] : "-";

    int *app = NULL, flag = 0;
    MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &app, &flag));
    CHECK(flag, "MPI_APPNUM is not set");
    int appnum = flag ? *app : -1;
    CHECK(appnum == want_app, "MPI_APPNUM %d, expected %d", appnum, want_app);

    const char *env = getenv("LANAI_TEST_ENV");
    if (strcmp(want_env, "-") == 0)
        CHECK(env == NULL, "LANAI_TEST_ENV=%s, expected unset", env);
    else
        CHECK(env && strcmp(env, want_env) == 0, "LANAI_TEST_ENV=%s, expected %s",
              env ? env : "(unset)", want_env);
    const char *g = getenv("LANAI_TEST_G");
    CHECK(g && strcmp(g, "g") == 0, "LANAI_TEST_G=%s, expected g", g ? g : "(unset)");
    if (argc >= 4) {
        char cwd[4096];
        CHECK(getcwd(cwd, sizeof cwd) && strcmp(cwd, argv[3]) == 0,
              "working directory %s, expected %s", cwd, argv[3]);
    }

    /* The programs talk: one communicator per program, and the world. */
    MPI_Comm mine;
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, appnum, lt_rank, &mine));
    int first = lt_rank, n = 0;
    MPI_OK(MPI_Bcast(&first, 1, MPI_INT, 0, mine));
    MPI_OK(MPI_Comm_size(mine, &n));
    int lead = 0;
    MPI_OK(MPI_Allreduce(&first, &lead, 1, MPI_INT, MPI_MIN, mine));
    CHECK(lead == first, "program %d: lowest rank %d, broadcast %d", appnum, lead, first);
    MPI_Comm_free(&mine);

    MPI_Comm node;
    int shared = 0;
    MPI_OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    MPI_OK(MPI_Comm_size(node, &shared));
    MPI_Comm_free(&node);

    int mine2[2] = {appnum, shared};
    int *all = malloc(sizeof(int) * 2 * (size_t)lt_size);
    MPI_OK(MPI_Gather(mine2, 2, MPI_INT, all, 2, MPI_INT, 0, MPI_COMM_WORLD));
    if (lt_rank == 0) {
        printf("layout appnums=");
        for (int r = 0; r < lt_size; r++) printf("%s%d", r ? "," : "", all[2 * r]);
        printf(" shared=");
        for (int r = 0; r < lt_size; r++) printf("%s%d", r ? "," : "", all[2 * r + 1]);
        printf("\n");
        fflush(stdout);
    }
    free(all);
    return lt_finish();
}
