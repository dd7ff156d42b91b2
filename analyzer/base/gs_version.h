/* gs_version.h — the version of gpustarve the command and its outputs
 * name (--version, the HTML report's generator line).
 *
 * Must never: be confused with the trace format's version (trace/gs_format.h).
 */
#ifndef GS_VERSION_H
#define GS_VERSION_H

#define GS_CLI_VERSION "0.1.0"

#endif
