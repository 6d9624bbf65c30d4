// libavahi-client, for ContinuumDiscovery only (CI checks that no other module imports CAvahi).
#ifndef CONTINUUM_CAVAHI_SHIM_H
#define CONTINUUM_CAVAHI_SHIM_H

#include <avahi-client/client.h>
#include <avahi-client/publish.h>
#include <avahi-client/lookup.h>
#include <avahi-common/thread-watch.h>
#include <avahi-common/error.h>
#include <avahi-common/strlst.h>
#include <avahi-common/address.h>
#include <avahi-common/alternative.h>
#include <avahi-common/malloc.h>
#include <net/if.h>

#endif
