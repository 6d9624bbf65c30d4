// gexiv2 (the GObject C API over exiv2 0.27), for ContinuumMedia only (CI checks that no other module imports
// CGExiv2). ContinuumMedia uses it to remove location metadata from a photo without touching its pixels.
//
// gexiv2's functions are not variadic and are imported directly; these wrappers only hide GObject and GError
// handling that Swift would otherwise do by hand.
#ifndef CONTINUUM_CGEXIV2_SHIM_H
#define CONTINUUM_CGEXIV2_SHIM_H

#include <gexiv2/gexiv2.h>

/// Releases metadata (a GObject).
static inline void cgexiv2_unref(GExiv2Metadata *metadata) { g_object_unref(metadata); }

/// The message of a GError, and frees it; NULL for no error. Free the result with g_free.
static inline char *cgexiv2_take_error(GError *error) {
    if (error == NULL) return NULL;
    char *message = g_strdup(error->message);
    g_error_free(error);
    return message;
}

#endif
