// libvips, for ContinuumMedia only (CI checks that no other module imports CVips).
//
// Most libvips operations take NULL-terminated variadic option lists, which Swift cannot call, and VIPS_INIT is a
// macro. These non-variadic wrappers fix the options each call needs; the non-variadic functions
// (vips_image_get_string, vips_error_buffer_copy, …) are imported directly.
#ifndef CONTINUUM_CVIPS_SHIM_H
#define CONTINUUM_CVIPS_SHIM_H

#include <vips/vips.h>

/// VIPS_INIT; 0 on success. Idempotent.
static inline int cvips_init(const char *argv0) { return VIPS_INIT(argv0); }

/// Opens a file for reading its header and metadata; pixels are decoded only when something reads them, once,
/// top to bottom. Damage at `fail_on` or worse is an error rather than grey pixels: VIPS_FAIL_ON_WARNING also
/// refuses what libjpeg calls "Corrupt JPEG data" (garbage after a valid header), which VIPS_FAIL_ON_ERROR lets
/// through.
static inline VipsImage *cvips_open_sequential(const char *path, VipsFailOn fail_on) {
    return vips_image_new_from_file(path, "access", VIPS_ACCESS_SEQUENTIAL, "fail_on", fail_on, NULL);
}

/// Opens bytes in memory, like cvips_open_sequential. libvips reads `buf` lazily: keep it alive while `out` is.
static inline VipsImage *cvips_open_buffer(const void *buf, size_t len) {
    return vips_image_new_from_buffer(buf, len, "", "access", VIPS_ACCESS_SEQUENTIAL, "fail_on", VIPS_FAIL_ON_ERROR,
                                      NULL);
}

/// The average of every pixel: reads (decodes) the whole image.
static inline int cvips_avg(VipsImage *in, double *out) { return vips_avg(in, out, NULL); }

/// A thumbnail of a file: fits in size × size, only ever shrinks, EXIF orientation applied. A damaged file fails
/// (vips_thumbnail of a file has no option_string in 8.14; its fail_on reaches the loader).
static inline int cvips_thumbnail_file(const char *path, VipsImage **out, int size) {
    return vips_thumbnail(path, out, size, "height", size, "size", VIPS_SIZE_DOWN, "fail_on", VIPS_FAIL_ON_ERROR,
                          NULL);
}

/// A thumbnail of bytes in memory, like cvips_thumbnail_file. libvips reads `buf` only when the result is saved:
/// keep it alive (and unmoved) until then. In 8.14 `fail_on` is not forwarded to the loader; the option string is.
static inline int cvips_thumbnail_buffer(void *buf, size_t len, VipsImage **out, int size) {
    return vips_thumbnail_buffer(buf, len, out, size, "height", size, "size", VIPS_SIZE_DOWN, "fail_on",
                                 VIPS_FAIL_ON_ERROR, "option_string", "fail_on=error", NULL);
}

/// JPEG at quality `q`, with every metadata field stripped (EXIF, GPS, XMP, IPTC, ICC). Free `*buf` with g_free.
static inline int cvips_jpegsave_buffer(VipsImage *in, void **buf, size_t *len, int q) {
    return vips_jpegsave_buffer(in, buf, len, "Q", q, "strip", TRUE, NULL);
}

/// Releases an image (a GObject).
static inline void cvips_unref(VipsImage *image) { g_object_unref(image); }

/// The loader that produced an image ("jpegload", "pngload_buffer", …), or NULL.
static inline const char *cvips_loader(VipsImage *image) {
    const char *name = NULL;
    if (vips_image_get_typeof(image, "vips-loader") == 0) return NULL;
    if (vips_image_get_string(image, "vips-loader", &name) != 0) return NULL;
    return name;
}

#endif
