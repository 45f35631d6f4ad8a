/* Pipeline stages of a training graph (memplan/parallel.h). */
#include "ranks.h"

mp_status mp__parallel_pipeline(const mp_graph *t,
                                const mp_parallel_options *o, mp_parallel *p)
{
    (void)o;
    (void)p;
    return mp__err(t->ctx, MP_ERR_UNSUPPORTED, "parallel: --pp");
}
