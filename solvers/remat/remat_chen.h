/* solvers/remat/remat_chen.h - Checkmate's fixed-checkpoint baselines
 * (solvers/remat/remat_chen.c): the schedules its code builds from a
 * checkpoint set, for the search (solvers/remat/search.c). Internal, not
 * installed. */
#ifndef MP__REMAT_CHEN_H
#define MP__REMAT_CHEN_H

#include "model.h"

/* Which of Checkmate's S rules (remat_chen.c lists them): its released
 * code (January 2020 on), or the code of its published max-batch figure
 * (autumn 2019). */
enum { MP__REMAT_CM_RELEASED = 0, MP__REMAT_CM_2019 = 1 };

/* The schedule Checkmate's code builds for the checkpoint set is_ckpt
 * (gen_s_matrix_fixed_checkpoints, solve_r_opt, schedule_from_rs):
 * out->steps owned by the caller. */
mp_status mp__remat_checkmate_fixed(const mp__remat_prob *p,
                                    const uint8_t *is_ckpt, int rules,
                                    mp__remat_out *out);

/* One of the baselines (MP_REMAT_CHEN_LINEAR, MP_REMAT_CM_*): its
 * schedules go to offer. */
mp_status mp__remat_checkmate_baseline(const mp__remat_prob *p,
                                       mp_remat_solver which,
                                       mp__remat_offer_fn offer, void *user);

#endif /* MP__REMAT_CHEN_H */
