/* agreement.h: the one rule by which a device is judged against its peers
 * (docs/runner.md, "Peers: one rule"): who its peers are, whether their
 * outputs agree bit for bit, and whether it straggles. The rule works on
 * plain data, so that the runner (agreement.c, over a run's results), its
 * unit test (agreement_test.c) and its Python twin (report/kcs_peers.py, for
 * the fleet report's groups that span several results files) apply it to
 * the same fixture (tests/peers-fixture/) and must reach the same verdicts.
 */
#ifndef KCS_AGREEMENT_H
#define KCS_AGREEMENT_H

#include <stddef.h>

#include <jansson.h>

/* The smallest slowdown called a straggler, whatever the noise. */
#define KCS_STRAGGLER_MINIMUM_EFFECT 0.10

/* A device's identity, "backend | name | platform | driver | runtime", from
 * its record in the results' "devices": devices alike in all five are
 * peers (one run holds one kcs build; the fleet adds the build). */
void kcs_peer_identity(json_t *device, char *identity, size_t size);

/* One device's kernel timing of one case and kernel. A median that is not
 * a finite positive number means no timing: the device takes no part. */
typedef struct {
    const char *identity; /* kcs_peer_identity's text */
    double median_s, lower_quartile_s, upper_quartile_s;
} kcs_peer_timing;

/* What the rule says of one timing. */
typedef struct {
    int peers;            /* timed devices of its identity besides it; 0: not judged */
    double peer_median_s; /* the median of those peers' medians */
    double threshold;     /* its identity group's noise, at least the minimum effect */
    double ratio;         /* median_s / peer_median_s */
    int straggler;        /* median_s > peer_median_s * (1 + threshold) */
} kcs_speed_verdict;

/* Judges count timings of one case and kernel, of any identities: each
 * against the others of its identity; verdicts[i] is timings[i]'s. */
void kcs_judge_speed(const kcs_peer_timing *timings, int count, kcs_speed_verdict *verdicts);

/* Whether a device's result proves its kernel's bits mean something. */
typedef enum {
    KCS_PROVED_DETERMINISTIC, /* --determinism ran it twice: the same bits */
    KCS_NOT_PROVED,           /* the run was made without --determinism */
    KCS_NONDETERMINISTIC,     /* --determinism ran it twice: other bits */
} kcs_determinism;

/* One device's outputs of one case and kernel. */
typedef struct {
    const char *identity; /* kcs_peer_identity's text */
    const char *answer;   /* every output's hash in one string: equal strings, equal bits */
    kcs_determinism determinism;
} kcs_peer_answer;

/* A group's verdict. */
typedef enum {
    KCS_ALONE,        /* no other device of its identity: nothing to compare */
    KCS_AGREE,        /* every device's bits are equal */
    KCS_DISAGREE,     /* they are not, and every device's kernel was proved deterministic */
    KCS_NOT_COMPARED, /* some device's kernel was not proved deterministic */
} kcs_agreement_kind;

/* What the rule says of one answer, and of its group. */
typedef struct {
    int group;                 /* index of the first answer of its identity */
    int members;               /* answers of its identity, itself included */
    kcs_agreement_kind verdict; /* its group's */
    int decided;               /* on disagree: more than half the group has one answer */
    int differs;               /* on disagree: outside that majority (every member without one) */
    int because;               /* on not compared: the answer whose determinism decided it */
} kcs_agreement_verdict;

/* Judges count answers of one case and kernel, of any identities, group by
 * group; verdicts[i] is answers[i]'s. */
void kcs_judge_agreement(const kcs_peer_answer *answers, int count, kcs_agreement_verdict *verdicts);

#endif
