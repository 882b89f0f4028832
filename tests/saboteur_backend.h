/* saboteur_backend.h: deliberately broken kernels for the harness's own tests. */
#ifndef KCS_SABOTEUR_BACKEND_H
#define KCS_SABOTEUR_BACKEND_H

#include "backend.h"

/* The reference backend's device and buffers with a table of broken kernels. */
kcs_backend kcs_saboteur_backend(void);

#endif
