// libgeonames (Debian's libgeonames0, its data in libgeonames-common): the cities of GeoNames, offline. For
// ContinuumMedia only (CI checks that no other module imports CGeonames). Every function is imported as it is.
#ifndef CONTINUUM_CGEONAMES_SHIM_H
#define CONTINUUM_CGEONAMES_SHIM_H

#include <geonames.h>

#endif
