/* The tool information interface: Lanai's knobs as control variables and
 * its counters as performance variables.
 * Run with LANAI_EAGER_LIMIT=4096 in the environment; every value read is
 * compared with getenv() or the registry's count printed by lanai-info. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank = -1;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            printf("FAIL mpi_t: rank %d: ", rank);                        \
            printf(__VA_ARGS__);                                           \
            printf("\n");                                                  \
            fflush(stdout);                                                \
            exit(1);                                                       \
        }                                                                  \
    } while (0)

int main(int argc, char **argv) {
    int provided = -1, n = -1, idx = -1, rc;
    /* Before MPI_Init: MPI_T works on its own. */
    CHECK(MPI_T_cvar_get_num(&n) == MPI_T_ERR_NOT_INITIALIZED, "query before MPI_T_init_thread");
    CHECK(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided) == MPI_SUCCESS, "MPI_T_init_thread");
    CHECK(provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_MULTIPLE, "provided %d", provided);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    CHECK(MPI_T_cvar_get_num(&n) == MPI_SUCCESS && n >= 20, "cvar count %d", n);
    int want_n = argc > 1 ? atoi(argv[1]) : n;
    CHECK(n == want_n, "cvar count %d, lanai-info lists %d", n, want_n);
    CHECK(MPI_T_cvar_get_index("LANAI_EAGER_LIMIT", &idx) == MPI_SUCCESS && idx >= 0 && idx < n,
          "index of LANAI_EAGER_LIMIT");
    CHECK(MPI_T_cvar_get_index("NO_SUCH_KNOB", &idx) == MPI_T_ERR_INVALID_NAME, "unknown name");
    MPI_T_cvar_get_index("LANAI_EAGER_LIMIT", &idx);

    char name[64], desc[512];
    int name_len = sizeof name, desc_len = sizeof desc, verbosity, bind, scope;
    MPI_Datatype dt;
    MPI_T_enum et;
    rc = MPI_T_cvar_get_info(idx, name, &name_len, &verbosity, &dt, &et, desc, &desc_len, &bind, &scope);
    CHECK(rc == MPI_SUCCESS, "cvar_get_info rc %d", rc);
    CHECK(strcmp(name, "LANAI_EAGER_LIMIT") == 0 && name_len == (int)strlen(name) + 1,
          "name '%s' len %d", name, name_len);
    CHECK(desc_len > 1 && strlen(desc) + 1 == (size_t)desc_len, "description");
    CHECK(dt == MPI_CHAR && et == MPI_T_ENUM_NULL && bind == MPI_T_BIND_NO_OBJECT &&
              scope == MPI_T_SCOPE_CONSTANT && verbosity == MPI_T_VERBOSITY_USER_BASIC,
          "cvar attributes");
    /* The length convention: no buffer gives the length needed. */
    name_len = 0;
    MPI_T_cvar_get_info(idx, NULL, &name_len, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    CHECK(name_len == (int)strlen("LANAI_EAGER_LIMIT") + 1, "length query %d", name_len);
    name_len = 6;
    MPI_T_cvar_get_info(idx, name, &name_len, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    CHECK(strcmp(name, "LANAI") == 0 && name_len == 6, "truncated name '%s' %d", name, name_len);

    MPI_T_cvar_handle h;
    int count = -1;
    CHECK(MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) == MPI_SUCCESS, "handle_alloc");
    const char *env = getenv("LANAI_EAGER_LIMIT");
    CHECK(env != NULL, "the test runs with LANAI_EAGER_LIMIT set");
    CHECK(count == (int)strlen(env) + 1, "count %d for '%s'", count, env);
    char *val = malloc(count);
    CHECK(MPI_T_cvar_read(h, val) == MPI_SUCCESS && strcmp(val, env) == 0, "value '%s'", val);
    CHECK(MPI_T_cvar_write(h, "1") == MPI_T_ERR_CVAR_SET_NEVER, "write refused");
    CHECK(MPI_T_cvar_handle_free(&h) == MPI_SUCCESS && h == MPI_T_CVAR_HANDLE_NULL, "handle_free");
    free(val);

    int ncat = -1, ncv = -1, npv = -1, nsub = -1, cat = -1;
    CHECK(MPI_T_category_get_num(&ncat) == MPI_SUCCESS && ncat == 1, "categories %d", ncat);
    name_len = sizeof name;
    desc_len = sizeof desc;
    CHECK(MPI_T_category_get_info(0, name, &name_len, desc, &desc_len, &ncv, &npv, &nsub) == MPI_SUCCESS,
          "category_get_info");
    CHECK(ncv == n && nsub == 0, "category counts %d %d %d", ncv, npv, nsub);
    CHECK(MPI_T_category_get_index(name, &cat) == MPI_SUCCESS && cat == 0, "category index");
    int *ids = malloc(sizeof(int) * n);
    CHECK(MPI_T_category_get_cvars(0, n, ids) == MPI_SUCCESS, "category_get_cvars");
    for (int i = 0; i < n; i++) CHECK(ids[i] == i, "category member %d", i);
    free(ids);
    CHECK(MPI_T_category_get_info(1, NULL, NULL, NULL, NULL, NULL, NULL, NULL) == MPI_T_ERR_INVALID_INDEX,
          "category 1");

    int np = -1, ne = -1, ns = -1, pidx = -1;
    CHECK(MPI_T_pvar_get_num(&np) == MPI_SUCCESS && np >= 10, "pvars %d", np);
    CHECK(npv == np, "the category lists %d of %d pvars", npv, np);
    CHECK(MPI_T_event_get_num(&ne) == MPI_SUCCESS && ne == 0, "events %d", ne);
    CHECK(MPI_T_source_get_num(&ns) == MPI_SUCCESS && ns == 0, "sources %d", ns);
    CHECK(MPI_T_pvar_get_info(np, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) ==
              MPI_T_ERR_INVALID_INDEX,
          "pvar past the end");
    CHECK(MPI_T_pvar_get_index("lanai_self_messages", MPI_T_PVAR_CLASS_TIMER, &pidx) == MPI_T_ERR_INVALID_NAME,
          "pvar of the wrong class");
    CHECK(MPI_T_pvar_get_index("lanai_self_messages", MPI_T_PVAR_CLASS_COUNTER, &pidx) == MPI_SUCCESS,
          "pvar index");
    int var_class, readonly, continuous, atomic;
    name_len = sizeof name;
    CHECK(MPI_T_pvar_get_info(pidx, name, &name_len, &verbosity, &var_class, &dt, &et, NULL, NULL, &bind,
                              &readonly, &continuous, &atomic) == MPI_SUCCESS,
          "pvar_get_info");
    CHECK(strcmp(name, "lanai_self_messages") == 0 && var_class == MPI_T_PVAR_CLASS_COUNTER &&
              dt == MPI_UNSIGNED_LONG_LONG && readonly && continuous && bind == MPI_T_BIND_NO_OBJECT,
          "pvar attributes");

    MPI_T_pvar_session s;
    MPI_T_pvar_handle ph;
    CHECK(MPI_T_pvar_session_create(&s) == MPI_SUCCESS, "session_create");
    CHECK(MPI_T_pvar_handle_alloc(s, pidx, NULL, &ph, &count) == MPI_SUCCESS && count == 1, "pvar handle");
    unsigned long long got = 99;
    CHECK(MPI_T_pvar_read(s, ph, &got) == MPI_SUCCESS && got == 0, "counted %llu before sending", got);
    /* Counted from the handle's allocation: exactly the messages sent to self. */
    for (int i = 0; i < 7; i++) {
        int x = i, y = -1;
        MPI_Sendrecv(&x, 1, MPI_INT, rank, 3, &y, 1, MPI_INT, rank, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(y == i, "self message %d", i);
    }
    CHECK(MPI_T_pvar_read(s, ph, &got) == MPI_SUCCESS && got == 7, "counted %llu self messages", got);
    CHECK(MPI_T_pvar_start(s, ph) == MPI_T_ERR_PVAR_NO_STARTSTOP, "continuous pvar started");
    CHECK(MPI_T_pvar_start(s, MPI_T_PVAR_ALL_HANDLES) == MPI_SUCCESS, "start all handles");
    CHECK(MPI_T_pvar_write(s, ph, &got) == MPI_T_ERR_PVAR_NO_WRITE, "read-only pvar written");
    CHECK(MPI_T_pvar_reset(s, ph) == MPI_T_ERR_PVAR_NO_WRITE, "read-only pvar reset");
    CHECK(MPI_T_pvar_handle_free(s, &ph) == MPI_SUCCESS && ph == MPI_T_PVAR_HANDLE_NULL, "pvar handle_free");
    CHECK(MPI_T_pvar_read(s, ph, &got) == MPI_T_ERR_INVALID_HANDLE, "read of a freed handle");
    CHECK(MPI_T_pvar_session_free(&s) == MPI_SUCCESS && s == MPI_T_PVAR_SESSION_NULL, "session_free");

    MPI_Finalize();
    /* After MPI_Finalize too, then a balanced finalize. */
    CHECK(MPI_T_cvar_get_num(&n) == MPI_SUCCESS, "query after MPI_Finalize");
    CHECK(MPI_T_finalize() == MPI_SUCCESS, "MPI_T_finalize");
    CHECK(MPI_T_finalize() == MPI_T_ERR_NOT_INITIALIZED, "unbalanced MPI_T_finalize");
    if (rank == 0) printf("PASS mpi_t\n");
    return 0;
}
