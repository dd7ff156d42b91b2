/* an_shares.h — the eight parts a step's time is cut into (model/an_attrib.h
 * measures them), by which the verdict and the advice are decided and every
 * output names them (docs/report-schema.md, "Attribution of a step").
 *
 * Must never: change an order or a name without the schema doc: the JSON
 * names are the report's field names.
 */
#ifndef AN_SHARES_H
#define AN_SHARES_H

/* Summary shares, fractions of total measured step time. */
enum {
    AN_SH_COMPUTE,
    AN_SH_COMM,
    AN_SH_H2D_PINNED,
    AN_SH_H2D_PAGEABLE,
    AN_SH_COPY_OTHER,
    AN_SH_DATA_WAIT,
    AN_SH_PAGEABLE_COPY,
    AN_SH_HOST,
    AN_NSH
};
/* "gpu_compute", ... "idle_host": the JSON names, in enum order. */
extern const char *const an_share_names[AN_NSH];

#endif
