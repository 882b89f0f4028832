/* backend_test.c: the order in which a backend's back-to-back repeats are
 * queued, closed and read (kcs_back_to_back_walk, backend.h). Both GPU
 * backends time through it, so this runs its logic without a GPU: a recording
 * backend logs every call, and the tests check the log against the rules
 * backend.h states: each repeat made once and in order, each chunk closed
 * before the one queued before it is read, every chunk read once, a slot
 * reused only after it was read, a repeat that records no timed run, or
 * two, fails naming it, and a walk of no repeats fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "backend.h"

enum { most_slots = 4, most_events = 4096, most_repeats = 200 };

typedef struct {
    char kind; /* 'o'pen, 'r'un, 'c'lose, 'R'ead */
    int slot, first, count;
} event;

typedef struct {
    event log[most_events];
    int events;
    int first[most_slots], count[most_slots], recorded[most_slots];
    bool open[most_slots], unread[most_slots]; /* unread: closed, not read yet */
    int runs_to_record[most_repeats];          /* timed runs repeat r records (1 unless a test says) */
    int failing_repeat;                        /* its run fails; -1: none */
    int failing_read;                          /* the read of the chunk beginning at this repeat fails; -1: none */
    int current;                               /* the slot open now; -1: none */
    kcs_status close_status;                   /* what the last close was handed */
} recorder;

static void note(recorder *r, char kind, int slot, int first, int count)
{
    assert_true(r->events < most_events);
    r->log[r->events++] = (event){kind, slot, first, count};
}

static kcs_status open_slot(void *backend, int slot, int first, int count, kcs_error *err)
{
    (void)err;
    recorder *r = backend;
    assert_in_range(slot, 0, most_slots - 1);
    assert_false(r->unread[slot]); /* its last chunk was read before the slot is used again */
    assert_int_equal(r->current, -1);
    r->first[slot] = first;
    r->count[slot] = count;
    r->recorded[slot] = 0;
    r->open[slot] = true;
    r->current = slot;
    note(r, 'o', slot, first, count);
    return KCS_OK;
}

static int recorded(void *backend, int slot)
{
    return ((recorder *)backend)->recorded[slot];
}

static kcs_status close_slot(void *backend, int slot, kcs_status status, kcs_error *err)
{
    (void)err;
    recorder *r = backend;
    assert_true(r->open[slot]);
    r->open[slot] = false;
    r->unread[slot] = status == KCS_OK;
    r->current = -1;
    r->close_status = status;
    note(r, 'c', slot, r->first[slot], r->count[slot]);
    return status;
}

static kcs_status read_slot(void *backend, int slot, double *seconds, kcs_error *err)
{
    recorder *r = backend;
    assert_true(r->unread[slot]);
    r->unread[slot] = false;
    note(r, 'R', slot, r->first[slot], r->count[slot]);
    if (r->first[slot] == r->failing_read)
        return kcs_fail(err, KCS_ERROR, "the chunk at %d could not be read", r->first[slot]);
    for (int i = 0; i < r->count[slot]; i++)
        seconds[r->first[slot] + i] = r->first[slot] + i + 1.0;
    return KCS_OK;
}

/* A repeat: records runs_to_record[repeat] timed runs into the open slot. */
static kcs_status run_repeat(void *context, int repeat, kcs_error *err)
{
    recorder *r = context;
    assert_true(r->current >= 0);
    note(r, 'r', r->current, repeat, 1);
    if (repeat == r->failing_repeat)
        return kcs_fail(err, KCS_ERROR, "repeat %d failed", repeat);
    r->recorded[r->current] += r->runs_to_record[repeat];
    return KCS_OK;
}

static void reset(recorder *r)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < most_repeats; i++)
        r->runs_to_record[i] = 1;
    r->failing_repeat = r->failing_read = r->current = -1;
}

static kcs_status walk(recorder *r, int repeats_a_chunk, int slots, int count, double *seconds, kcs_error *err)
{
    const kcs_back_to_back order = {repeats_a_chunk, slots, r, open_slot, recorded, close_slot, read_slot};
    return kcs_back_to_back_walk(&order, count, run_repeat, r, seconds, err);
}

/* The log of a walk that succeeded, checked against the rules. */
static void check_order(const recorder *r, int repeats_a_chunk, int slots, int count, const double *seconds)
{
    const int chunks = (count + repeats_a_chunk - 1) / repeats_a_chunk;
    int next_repeat = 0, opened = 0, closed = 0, read = 0;
    for (int e = 0; e < r->events; e++) {
        const event *v = &r->log[e];
        switch (v->kind) {
        case 'o':
            assert_int_equal(v->slot, opened % slots); /* slots in turn */
            assert_int_equal(v->first, opened * repeats_a_chunk);
            assert_int_equal(v->count, opened + 1 < chunks ? repeats_a_chunk : count - opened * repeats_a_chunk);
            assert_int_equal(closed, opened); /* one chunk open at a time */
            opened++;
            break;
        case 'r':
            assert_int_equal(v->first, next_repeat++); /* each repeat once, in order */
            assert_int_equal(v->slot, (opened - 1) % slots);
            break;
        case 'c':
            assert_int_equal(next_repeat, v->first + v->count); /* closed once its repeats are queued */
            closed++;
            break;
        case 'R':
            /* chunk `read` is read once the chunk after it is closed (or it is the last) */
            assert_int_equal(v->first, read * repeats_a_chunk);
            assert_int_equal(closed, read + 1 < chunks ? read + 2 : chunks);
            read++;
            break;
        default:
            fail_msg("unknown event %c", v->kind);
        }
    }
    assert_int_equal(next_repeat, count);
    assert_int_equal(opened, chunks);
    assert_int_equal(closed, chunks);
    assert_int_equal(read, chunks);
    for (int i = 0; i < count; i++)
        assert_true(seconds[i] == i + 1.0);
}

static void every_repeat_is_queued_once_and_read_after_the_next_chunk(void **state)
{
    (void)state;
    static recorder r;
    const int counts[] = {1, 15, 16, 17, 32, 33, 100, most_repeats};
    const int shapes[][2] = {{16, 2}, {16, 3}, {1, 2}, {7, 4}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            double seconds[most_repeats];
            for (int i = 0; i < most_repeats; i++)
                seconds[i] = -1.0;
            kcs_error err = {{0}};
            reset(&r);
            assert_int_equal(walk(&r, shapes[s][0], shapes[s][1], counts[c], seconds, &err), KCS_OK);
            check_order(&r, shapes[s][0], shapes[s][1], counts[c], seconds);
        }
}

/* A repeat that records no timed run, or two, fails the walk naming it; its
 * chunk is still closed and nothing after it is queued or read. */
static void a_repeat_must_record_exactly_one_timed_run(void **state)
{
    (void)state;
    static recorder r;
    const int wrong[] = {0, 2};
    for (size_t w = 0; w < 2; w++) {
        double seconds[most_repeats];
        kcs_error err = {{0}};
        reset(&r);
        r.runs_to_record[20] = wrong[w];
        assert_int_equal(walk(&r, 16, 2, 40, seconds, &err), KCS_ERROR);
        char want[128];
        snprintf(want, sizeof want, "repeat 20 recorded %d timed runs where one was due", wrong[w]);
        if (!strstr(err.message, want))
            fail_msg("the error says '%s', not '%s'", err.message, want);
        assert_int_equal(r.close_status, KCS_ERROR);
        assert_int_equal(r.current, -1); /* closed */
        const event *last = &r.log[r.events - 1];
        assert_int_equal(last->kind, 'c');
        assert_int_equal(last->first, 16);
        for (int e = 0; e < r.events; e++)
            assert_false(r.log[e].kind == 'r' && r.log[e].first > 20);
    }
}

static void a_failure_ends_the_walk_and_is_returned(void **state)
{
    (void)state;
    static recorder r;
    double seconds[most_repeats];
    kcs_error err = {{0}};

    reset(&r); /* a repeat that fails */
    r.failing_repeat = 35;
    assert_int_equal(walk(&r, 16, 2, 100, seconds, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "repeat 35 failed"));
    assert_int_equal(r.close_status, KCS_ERROR);
    assert_int_equal(r.log[r.events - 1].kind, 'c');

    reset(&r); /* a chunk that cannot be read: nothing is queued after it */
    r.failing_read = 16;
    assert_int_equal(walk(&r, 16, 2, 100, seconds, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "the chunk at 16 could not be read"));
    const event *last = &r.log[r.events - 1];
    assert_int_equal(last->kind, 'R');
    assert_int_equal(last->first, 16);

    reset(&r); /* the last chunk's read fails too */
    r.failing_read = 96;
    assert_int_equal(walk(&r, 16, 2, 100, seconds, &err), KCS_ERROR);
    assert_int_equal(r.log[r.events - 1].first, 96);
}

/* A walk of no repeats times nothing: it fails, without opening a slot. */
static void no_repeats_is_refused(void **state)
{
    (void)state;
    static recorder r;
    double seconds[1];
    kcs_error err = {{0}};
    for (int count = -1; count <= 0; count++) {
        reset(&r);
        assert_int_equal(walk(&r, 16, 2, count, seconds, &err), KCS_ERROR);
        assert_non_null(strstr(err.message, "at least one is due"));
        assert_int_equal(r.events, 0);
    }
}

static void chunks_that_cannot_overlap_are_refused(void **state)
{
    (void)state;
    static recorder r;
    double seconds[4];
    kcs_error err = {{0}};
    reset(&r);
    assert_int_equal(walk(&r, 16, 1, 4, seconds, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "cannot overlap"));
    assert_int_equal(walk(&r, 0, 2, 4, seconds, &err), KCS_ERROR);
    assert_int_equal(r.events, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_repeat_is_queued_once_and_read_after_the_next_chunk),
        cmocka_unit_test(a_repeat_must_record_exactly_one_timed_run),
        cmocka_unit_test(a_failure_ends_the_walk_and_is_returned),
        cmocka_unit_test(no_repeats_is_refused),
        cmocka_unit_test(chunks_that_cannot_overlap_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
