/* an_model.h — the analyzer's model of a run, in two halves: what one
 * streaming pass over the trace files keeps (an_run.h) and the answer the
 * analysis derives from it (an_result.h, with the verdict and advice rules
 * behind the narrow an_decide.h). Include this for both.
 *
 * Must never: print, or know about the command line (cmd_*.c do).
 */
#ifndef AN_MODEL_H
#define AN_MODEL_H

#include "model/an_result.h"
#include "load/an_run.h"

#endif
