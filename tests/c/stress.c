/* A few seconds of all-pairs 64 KiB exchanges with verification. Used by
 * the runner while a stranger sends garbage to the job's TCP ports.
 * Duration: argv[1] seconds, else $LANAI_STRESS_SECONDS, else 3. With
 * $LANAI_STRESS_UNTIL naming a file, it also runs until that file exists (at
 * most UNTIL_CAP_S): the stranger's test must not depend on how soon a loaded
 * machine lets it find the ports. */
#include "lt.h"

#include <unistd.h>

#define UNTIL_CAP_S 40.0

/* Words travel as MPI_UNSIGNED. */
_Static_assert(sizeof(unsigned) == sizeof(uint32_t), "unsigned must be 32 bits");

#define MSG_WORDS (64 * 1024 / 4)

static uint32_t word(int src, int round, int shift, int i)
{
    return ((uint32_t)i * 2246822519u) ^ ((uint32_t)src << 20) ^ ((uint32_t)round << 4) ^
           (uint32_t)shift;
}

int main(int argc, char **argv)
{
    static uint32_t out[MSG_WORDS], in[MSG_WORDS];
    double seconds = 3.0, t0;
    const char *env = getenv("LANAI_STRESS_SECONDS");
    const char *until = getenv("LANAI_STRESS_UNTIL");
    int round = 0, go = 1, shift, i;
    long exchanges = 0;

    lt_init("stress", &argc, &argv);
    if (argc > 1)
        seconds = atof(argv[1]);
    else if (env)
        seconds = atof(env);
    t0 = MPI_Wtime();
    while (go) {
        /* shift 0 is a self exchange, the rest visit every other rank. */
        for (shift = 0; shift < lt_size; shift++) {
            int to = (lt_rank + shift) % lt_size, from = (lt_rank - shift + lt_size) % lt_size;
            MPI_Status st;
            for (i = 0; i < MSG_WORDS; i++)
                out[i] = word(lt_rank, round, shift, i);
            MPI_OK(MPI_Sendrecv(out, MSG_WORDS, MPI_UNSIGNED, to, shift, in, MSG_WORDS,
                                MPI_UNSIGNED, from, shift, MPI_COMM_WORLD, &st));
            for (i = 0; i < MSG_WORDS; i++)
                if (in[i] != word(from, round, shift, i)) {
                    CHECK(0, "round %d shift %d from %d: word %d wrong", round, shift, from, i);
                    break;
                }
            exchanges++;
        }
        round++;
        /* Rank 0's clock decides, so every rank runs the same rounds. */
        if (lt_rank == 0) {
            double t = MPI_Wtime() - t0;
            int waiting = until && access(until, F_OK) != 0;
            go = t < seconds || (waiting && t < UNTIL_CAP_S);
            if (!go && waiting)
                printf("stress: %s did not appear within %.0f s\n", until, UNTIL_CAP_S);
        }
        MPI_OK(MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD));
    }
    if (lt_rank == 0) {
        printf("stress: %d rounds, %ld exchanges per rank in %.1f s\n", round, exchanges,
               MPI_Wtime() - t0);
        fflush(stdout);
    }
    return lt_finish();
}
