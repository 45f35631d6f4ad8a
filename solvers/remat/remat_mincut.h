/* solvers/remat/remat_mincut.h - the min-cut save/recompute choice
 * (solvers/remat/remat_mincut.c), as AOTAutograd's default partitioner
 * makes it: the forward values saved for backward are a minimum cut of a
 * flow network over the forward units; every other forward value that
 * backward reads is recomputed in backward from the saved ones; the
 * schedule written per tensor. Internal, not installed. */
#ifndef MP__REMAT_MINCUT_H
#define MP__REMAT_MINCUT_H

#include "model.h"

typedef struct mp__remat_mincut_choice {
    uint8_t *saved;          /* T: forward units kept for backward */
    uint64_t saved_bytes;    /* the cut: bytes of the saved units (graph
                              * outputs, kept anyway, not counted) */
    uint32_t n_saved, n_recomputed; /* units saved; forward units backward
                                     * reads that are not (recomputed) */
} mp__remat_mincut_choice;

/* The choice for p (p->cheap says which units may be recomputed; NULL:
 * none). Arrays on the context allocator; free with
 * mp__remat_mincut_free. MP_ERR_NOMEM, MP_ERR_OVERFLOW (from the flow). */
mp_status mp__remat_mincut_choose(const mp__remat_prob *p,
                                  mp__remat_mincut_choice *c);
void mp__remat_mincut_free(const mp__remat_prob *p,
                           mp__remat_mincut_choice *c);

/* The schedule that saves the forward units saved[] marks (NULL: all)
 * and recomputes the others that backward reads (solvers/remat/
 * remat_mincut.c says how), written per tensor: out->steps owned by the
 * caller, out->peak its live arena bytes. */
mp_status mp__remat_mincut_schedule(const mp__remat_prob *p,
                                    const uint8_t *saved, mp__remat_out *out);

/* The forward units the min-cut save plan drops after their last forward
 * reader and recomputes for backward, into seed[T] (a value backward
 * reads, not a graph output, that the cut does not save): where the
 * budget heuristics start from. *n their number (0: the cut saves every
 * value). */
mp_status mp__remat_mincut_seed(const mp__remat_prob *p, uint8_t *seed,
                                uint32_t *n);

/* Offers the min-cut schedule to the search ("mincut"); alone: the
 * schedule that saves everything ("eager") instead when its peak is
 * lower. */
mp_status mp__remat_mincut(const mp__remat_prob *p, int alone,
                           mp__remat_offer_fn offer, void *user);

#endif /* MP__REMAT_MINCUT_H */
