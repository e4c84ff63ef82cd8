/* Environment queries: Init_thread, Initialized/Finalized, versions,
 * processor name, timers, COMM_SELF, default and set error handlers. */
#include "lt.h"

static void timers(void)
{
    double t0, prev, now, tick;
    int i;
    tick = MPI_Wtick();
    CHECK(tick > 0.0 && tick < 1.0, "Wtick %g not in (0, 1)", tick);
    prev = MPI_Wtime();
    for (i = 0; i < 100000; i++) {
        now = MPI_Wtime();
        if (now < prev) {
            CHECK(0, "Wtime went backwards: %.9f then %.9f", prev, now);
            break;
        }
        prev = now;
    }
    t0 = MPI_Wtime();
    lt_sleep_ms(20);
    now = MPI_Wtime();
    CHECK(now - t0 >= 0.019 && now - t0 < 5.0, "20 ms sleep measured as %g s", now - t0);
}

static void versions(void)
{
    int version = -1, subversion = -1, len = -1;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING], name[MPI_MAX_PROCESSOR_NAME];
    MPI_OK(MPI_Get_version(&version, &subversion));
    CHECK(version == MPI_VERSION && subversion == MPI_SUBVERSION,
          "Get_version %d.%d, header says %d.%d", version, subversion, MPI_VERSION,
          MPI_SUBVERSION);
    lib[0] = 0;
    MPI_OK(MPI_Get_library_version(lib, &len));
    CHECK(len > 0 && len < MPI_MAX_LIBRARY_VERSION_STRING && strlen(lib) > 0,
          "Get_library_version len %d", len);
    name[0] = 0;
    len = -1;
    MPI_OK(MPI_Get_processor_name(name, &len));
    CHECK(len > 0 && len < MPI_MAX_PROCESSOR_NAME && (int)strlen(name) == len,
          "Get_processor_name len %d strlen %zu", len, strlen(name));
}

static void communicators(void)
{
    int size = -1, rank = -1, flag = 0, *ub = NULL;
    MPI_Errhandler eh;
    MPI_OK(MPI_Comm_size(MPI_COMM_SELF, &size));
    MPI_OK(MPI_Comm_rank(MPI_COMM_SELF, &rank));
    CHECK(size == 1 && rank == 0, "COMM_SELF size %d rank %d", size, rank);
    MPI_OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    MPI_OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK(size >= 1 && rank >= 0 && rank < size, "COMM_WORLD size %d rank %d", size, rank);
    MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
    CHECK(flag && ub && *ub >= 32767, "TAG_UB attribute flag %d value %d", flag, ub ? *ub : -1);

    MPI_OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "default COMM_WORLD errhandler is not ERRORS_ARE_FATAL");
    MPI_OK(MPI_Comm_get_errhandler(MPI_COMM_SELF, &eh));
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "default COMM_SELF errhandler is not ERRORS_ARE_FATAL");
    MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "COMM_WORLD errhandler not ERRORS_RETURN after set");
    MPI_OK(MPI_Comm_get_errhandler(MPI_COMM_SELF, &eh));
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "setting COMM_WORLD's handler changed COMM_SELF's");
    MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    MPI_OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "COMM_WORLD errhandler not restored");
}

int main(int argc, char **argv)
{
    int flag = -1, provided = -1, queried = -2, is_main = 0;
    long total;

    /* Before init: both queries are allowed and say no. */
    MPI_Initialized(&flag);
    if (flag != 0) {
        printf("FAIL env: MPI_Initialized true before init\n");
        return 1;
    }
    MPI_Finalized(&flag);
    if (flag != 0) {
        printf("FAIL env: MPI_Finalized true before init\n");
        return 1;
    }

    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    lt_after_init("env");
    CHECK(provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_MULTIPLE,
          "Init_thread provided %d out of range", provided);
    MPI_OK(MPI_Query_thread(&queried));
    CHECK(queried == provided, "Query_thread %d, Init_thread provided %d", queried, provided);
    MPI_OK(MPI_Is_thread_main(&is_main));
    CHECK(is_main, "Is_thread_main false on the main thread");
    MPI_OK(MPI_Initialized(&flag));
    CHECK(flag == 1, "Initialized false after init");
    MPI_OK(MPI_Finalized(&flag));
    CHECK(flag == 0, "Finalized true before finalize");

    timers();
    versions();
    communicators();

    total = lt_total_failures();
    MPI_Finalize();
    MPI_Finalized(&flag);
    if (flag != 1) {
        printf("FAIL env rank %d: Finalized false after finalize\n", lt_rank);
        total++;
    }
    MPI_Initialized(&flag);
    if (flag != 1) {
        printf("FAIL env rank %d: Initialized false after finalize\n", lt_rank);
        total++;
    }
    lt_print_verdict(total);
    return total == 0 ? 0 : 1;
}
