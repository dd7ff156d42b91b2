/* gs_test.h — kept for unit tests written against its old name: the
 * assertion helper of every C test is tests/gs_check.h. */
#ifndef GS_TEST_H
#define GS_TEST_H

#include "gs_check.h"

#define gs_t_finish gs_check_done

#endif
