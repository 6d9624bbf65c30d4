import CAvahi
import ContinuumCore
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// DNS-SD through avahi-daemon (libavahi-client): publishes this node's `_continuum._tcp` service, browses for
/// peers, and keeps a resolver per service so that TXT and address changes are seen.
///
/// With no daemon (or no system D-Bus) it says so in ``status()`` and in one log line, and retries in the
/// background; when the daemon restarts, the client is re-created and the service re-published, without
/// restarting the node.
///
/// Threading: every Avahi object (poll, client, entry group, browser, resolvers) and the Swift state that mirrors
/// them (`client`, `group`, `browser`, `resolvers`, `resolved`, `announced`, ...) are touched only (a) in Avahi's
/// callbacks, which run on the threaded poll's thread with the poll's lock held, or (b) from ``run(advertising:)``
/// between `avahi_threaded_poll_lock` and `avahi_threaded_poll_unlock` (see `locked`), or (c) in `run` after
/// `avahi_threaded_poll_stop` has joined that thread and before `run` returns. The lock serializes (a) and (b),
/// and (c) is single-threaded; so no two threads ever touch that state at once, which is what makes the
/// `@unchecked Sendable` below sound. `snapshot` is a `Mutex`, readable from any thread. `run` must be called
/// once per instance (a second call returns at once).
public final class AvahiDiscovery: PeerDiscovery, @unchecked Sendable {
    public let events: AsyncStream<DiscoveryEvent>
    private let continuation: AsyncStream<DiscoveryEvent>.Continuation
    private let logger: Logger
    private let retryInterval: Duration
    private let snapshot = Mutex(DiscoveryStatus(state: .starting))
    /// Open groups to announce from now on, set by ``announce(openGroups:)`` and applied by the run loop.
    private let pendingOpenGroups = Mutex<[AnnouncedGroup]?>(nil)
    private let running = Atomic(false)

    // Guarded by the threaded poll's lock (see above).
    private var poll: OpaquePointer?
    private var client: OpaquePointer?
    private var clientRunning = false
    private var failure: Int32?
    private var group: OpaquePointer?
    private var browser: OpaquePointer?
    private var resolvers: [ServiceKey: OpaquePointer] = [:]
    private var resolved: [ServiceKey: ResolvedService] = [:]
    private var announced: [AuthorID: DiscoveredPeer] = [:]
    /// Peers resolved only over IPv6 so far, held back until this time in case IPv4 follows.
    private var deferred: [AuthorID: ContinuousClock.Instant] = [:]
    private var seen: Set<AuthorID> = []
    private var otherNetworks: Set<AuthorID> = []
    private var advertisement: ServiceAdvertisement?
    private var serviceName: String?
    /// After a collision, publish again no sooner than this (see `groupChanged`).
    private var republishAt = ContinuousClock.now

    /// Services resolved at once, at most (per interface and address family); more are ignored.
    static let maxServices = 512

    /// `retryInterval`: how often to try again to reach the daemon while it is unavailable.
    public init(logger: Logger, retryInterval: Duration = .seconds(1)) {
        (events, continuation) = AsyncStream<DiscoveryEvent>.makeStream(bufferingPolicy: .bufferingNewest(1000))
        self.logger = logger
        self.retryInterval = retryInterval
    }

    public func status() -> DiscoveryStatus { snapshot.withLock { $0 } }

    public func announce(openGroups: [AnnouncedGroup]) { pendingOpenGroups.withLock { $0 = openGroups } }

    public func run(advertising advertisement: ServiceAdvertisement) async {
        guard running.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else {
            assertionFailure("AvahiDiscovery.run called twice")
            return
        }
        defer { continuation.finish() }
        guard let poll = avahi_threaded_poll_new() else {
            unavailable("cannot start an Avahi event loop (out of memory?)")
            return
        }
        // The poll thread is not running yet: no lock needed.
        self.poll = poll
        self.advertisement = advertisement
        serviceName = advertisement.instanceName
        guard avahi_threaded_poll_start(poll) >= 0 else {
            avahi_threaded_poll_free(poll)
            unavailable("cannot start the Avahi event loop thread")
            return
        }
        var lastAttempt: ContinuousClock.Instant?
        while !Task.isCancelled {
            locked {
                if let code = failure {
                    // The daemon went away (or the client failed otherwise): start over with a fresh client.
                    failure = nil
                    dropClient()
                    unavailable(Self.describe(code))
                }
                if client == nil, lastAttempt.map({ ContinuousClock.now - $0 >= retryInterval }) ?? true {
                    lastAttempt = .now
                    connect(poll)
                } else if clientRunning {
                    startServices()
                }
                for (node, deadline) in deferred where ContinuousClock.now >= deadline { recompute(node) }
                if let groups = pendingOpenGroups.withLock({ pending in
                    defer { pending = nil }
                    return pending
                }) {
                    updateOpenGroups(groups)
                }
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        avahi_threaded_poll_stop(poll)
        // The poll thread has ended: single-threaded from here.
        dropClient()
        avahi_threaded_poll_free(poll)
        self.poll = nil
    }

    // MARK: The client

    /// Creates the client (lock held). With `NO_FAIL` it waits for a daemon that is not there yet, as long as
    /// D-Bus is; without a system bus it fails at once.
    private func connect(_ poll: OpaquePointer) {
        var error: Int32 = 0
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        let created = avahi_client_new(
            avahi_threaded_poll_get(poll),
            AVAHI_CLIENT_NO_FAIL,
            { client, state, userdata in
                guard let client, let userdata else { return }
                Unmanaged<AvahiDiscovery>.fromOpaque(userdata).takeUnretainedValue().clientChanged(client, state)
            },
            userdata,
            &error
        )
        if let created {
            client = created
        } else {
            // Avahi freed whatever it had made (the callback may have seen it): forget it.
            client = nil
            clientRunning = false
            failure = nil
            unavailable(Self.describe(error))
        }
    }

    /// Client callback (lock held). Fires inside `avahi_client_new` too, before it returns.
    private func clientChanged(_ client: OpaquePointer, _ state: AvahiClientState) {
        self.client = client
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            clientRunning = true
            startServices()
        case AVAHI_CLIENT_S_COLLISION, AVAHI_CLIENT_S_REGISTERING:
            // The daemon's host name is changing: withdraw, and publish again once it is RUNNING.
            clientRunning = false
            if let group { avahi_entry_group_reset(group) }
        case AVAHI_CLIENT_CONNECTING:
            clientRunning = false
            unavailable("avahi-daemon not running (waiting for it to appear on D-Bus)")
        case AVAHI_CLIENT_FAILURE:
            clientRunning = false
            failure = avahi_client_errno(client)
        default:
            break
        }
    }

    /// Frees the client and everything it owns (lock held, or the poll stopped). Peers it had found are reported
    /// removed: whatever changed while the daemon was away is found again afresh.
    private func dropClient() {
        for resolver in resolvers.values { avahi_service_resolver_free(resolver) }
        resolvers = [:]
        resolved = [:]
        if let browser { avahi_service_browser_free(browser) }
        browser = nil
        if let group { avahi_entry_group_free(group) }
        group = nil
        if let client { avahi_client_free(client) }
        client = nil
        clientRunning = false
        for node in announced.keys.sorted() { continuation.yield(.removed(node)) }
        announced = [:]
        deferred = [:]
        publishSnapshot()
    }

    /// Publishes and browses, whichever is not done yet (lock held, client running).
    private func startServices() {
        guard let client, clientRunning else { return }
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        if group == nil {
            group = avahi_entry_group_new(
                client,
                { group, state, userdata in
                    guard let group, let userdata else { return }
                    Unmanaged<AvahiDiscovery>.fromOpaque(userdata).takeUnretainedValue().groupChanged(group, state)
                },
                userdata
            )
            if group == nil { return unavailable("cannot publish: \(Self.message(avahi_client_errno(client)))") }
        }
        if let group, avahi_entry_group_is_empty(group) != 0, ContinuousClock.now >= republishAt { publish(group) }
        if browser == nil {
            browser = avahi_service_browser_new(
                client,
                AvahiIfIndex(AVAHI_IF_UNSPEC),
                AvahiProtocol(AVAHI_PROTO_UNSPEC),
                ServiceAdvertisement.serviceType,
                nil,
                AvahiLookupFlags(0),
                { browser, interface, proto, event, name, type, domain, _, userdata in
                    guard let browser, let userdata else { return }
                    Unmanaged<AvahiDiscovery>.fromOpaque(userdata).takeUnretainedValue().browsed(
                        browser,
                        event,
                        ServiceKey(interface: interface, proto: proto, name: name, type: type, domain: domain)
                    )
                },
                userdata
            )
            if browser == nil { return unavailable("cannot browse: \(Self.message(avahi_client_errno(client)))") }
        }
    }

    // MARK: Publishing

    /// Adds the service to the (empty) entry group and commits it; on a local name collision, tries Avahi's
    /// alternative names.
    private func publish(_ group: OpaquePointer) {
        guard let advertisement, var name = serviceName else { return }
        var list: UnsafeMutablePointer<AvahiStringList>?
        // `avahi_string_list_add` prepends: add in reverse to keep the documented order.
        for entry in advertisement.txt.reversed() { list = avahi_string_list_add(list, entry) }
        defer { avahi_string_list_free(list) }
        for _ in 0..<20 {
            let added = avahi_entry_group_add_service_strlst(
                group,
                AvahiIfIndex(AVAHI_IF_UNSPEC),
                AvahiProtocol(AVAHI_PROTO_UNSPEC),
                AvahiPublishFlags(0),
                name,
                ServiceAdvertisement.serviceType,
                nil,
                nil,
                advertisement.port,
                list
            )
            if added == Int32(AVAHI_ERR_COLLISION) {
                name = Self.alternative(to: name)
                continue
            }
            guard added >= 0 else { return unavailable("cannot publish '\(name)': \(Self.message(added))") }
            serviceName = name
            let committed = avahi_entry_group_commit(group)
            if committed < 0 { unavailable("cannot publish '\(name)': \(Self.message(committed))") }
            return
        }
        unavailable("cannot publish: every alternative to the name '\(advertisement.instanceName)' is taken")
    }

    /// Announces other open groups (lock held): the published service's TXT record is replaced; one not published
    /// yet is published with them.
    private func updateOpenGroups(_ groups: [AnnouncedGroup]) {
        guard var advertisement, advertisement.openGroups != groups else { return }
        advertisement.openGroups = groups
        guard let group, avahi_entry_group_is_empty(group) == 0, let name = serviceName else {
            // Not published yet: published with them.
            self.advertisement = advertisement
            return
        }
        var list: UnsafeMutablePointer<AvahiStringList>?
        for entry in advertisement.txt.reversed() { list = avahi_string_list_add(list, entry) }
        defer { avahi_string_list_free(list) }
        let updated = avahi_entry_group_update_service_txt_strlst(
            group,
            AvahiIfIndex(AVAHI_IF_UNSPEC),
            AvahiProtocol(AVAHI_PROTO_UNSPEC),
            AvahiPublishFlags(0),
            name,
            ServiceAdvertisement.serviceType,
            nil,
            list
        )
        if updated < 0 {
            // Kept pending: the next announce(openGroups:) of the same groups tries again.
            logger.warning("cannot announce the open groups", metadata: ["error": "\(Self.message(updated))"])
        } else {
            self.advertisement = advertisement
            logger.info("announcing open groups", metadata: ["groups": "\(groups.map(\.name))"])
        }
    }

    /// Entry group callback (lock held).
    private func groupChanged(_ group: OpaquePointer, _ state: AvahiEntryGroupState) {
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            let name = serviceName
            let wasOff = snapshot.withLock { status in
                let wasOff = status.state == .unavailable
                status.state = .on
                status.serviceName = name
                return wasOff
            }
            // After the line saying it was off, say (at the same level) that it is back.
            logger.log(
                level: wasOff ? .warning : .info,
                "LAN discovery is on",
                metadata: [
                    "discovery.name": "\(serviceName ?? "")", "discovery.type": "\(ServiceAdvertisement.serviceType)",
                ]
            )
        case AVAHI_ENTRY_GROUP_COLLISION:
            // Another host on the LAN has this name: take Avahi's alternative ("name #2", ...) and publish again.
            let old = serviceName ?? ""
            serviceName = Self.alternative(to: old)
            logger.notice(
                "the service name is taken on the LAN; publishing under another",
                metadata: ["discovery.name": "\(old)", "discovery.alternative": "\(serviceName ?? "")"]
            )
            avahi_entry_group_reset(group)
            // Two nodes that took the same name at the same moment can both be told they lost (avahi compares
            // their records one by one), then both pick the same alternative, and again. A random pause breaks
            // the step; the run loop publishes once it is over.
            republishAt = .now + .milliseconds(Int.random(in: 100...1200))
        case AVAHI_ENTRY_GROUP_FAILURE:
            let code = avahi_client_errno(avahi_entry_group_get_client(group))
            unavailable("cannot publish: \(Self.message(code))")
        default:
            break
        }
    }

    // MARK: Browsing

    /// Service browser callback (lock held).
    private func browsed(_ browser: OpaquePointer, _ event: AvahiBrowserEvent, _ key: ServiceKey) {
        switch event {
        case AVAHI_BROWSER_NEW:
            guard resolvers[key] == nil, let client = avahi_service_browser_get_client(browser) else { return }
            guard resolvers.count < Self.maxServices else {
                // Anyone on the LAN can advertise: a flood of services must not become a flood of resolvers
                // and diallers.
                logger.notice(
                    "too many _continuum._tcp services on the LAN; ignoring this one",
                    metadata: ["discovery.service": "\(key.name)", "discovery.limit": "\(Self.maxServices)"]
                )
                return
            }
            let userdata = Unmanaged.passUnretained(self).toOpaque()
            // Resolve to an address of the family the service was seen on; the resolver stays alive to report
            // TXT and address changes, until the service is removed.
            let resolver = avahi_service_resolver_new(
                client,
                key.interface,
                key.proto,
                key.name,
                key.type,
                key.domain,
                key.proto,
                AvahiLookupFlags(0),
                { _, interface, proto, event, name, type, domain, _, address, port, txt, _, userdata in
                    guard let userdata else { return }
                    let key = ServiceKey(interface: interface, proto: proto, name: name, type: type, domain: domain)
                    let me = Unmanaged<AvahiDiscovery>.fromOpaque(userdata).takeUnretainedValue()
                    if event == AVAHI_RESOLVER_FOUND, let address {
                        me.resolvedService(key, address: address, port: port, txt: txt)
                    } else {
                        me.logger.debug("cannot resolve a service", metadata: ["discovery.service": "\(key.name)"])
                    }
                },
                userdata
            )
            if let resolver { resolvers[key] = resolver }
        case AVAHI_BROWSER_REMOVE:
            if let resolver = resolvers.removeValue(forKey: key) { avahi_service_resolver_free(resolver) }
            if let gone = resolved.removeValue(forKey: key) { recompute(gone.txt.node) }
        case AVAHI_BROWSER_FAILURE:
            failure = avahi_client_errno(avahi_service_browser_get_client(browser))
        default:
            break
        }
    }

    /// Resolver callback (lock held): a service's address, port and TXT, first found or changed.
    private func resolvedService(
        _ key: ServiceKey,
        address: UnsafePointer<AvahiAddress>,
        port: UInt16,
        txt: UnsafeMutablePointer<AvahiStringList>?
    ) {
        guard let advertisement else { return }
        let entries = Self.entries(txt)
        let parsed: ServiceTXT
        switch ServiceTXT.parse(entries) {
        case .success(let value): parsed = value
        case .failure(let error):
            logger.debug(
                "ignoring a _continuum._tcp service",
                metadata: ["discovery.service": "\(key.name)", "reason": "\(error.reason)"]
            )
            return
        }
        guard parsed.node != advertisement.node else { return }
        let previous = resolved[key]
        guard parsed.networkHash == advertisement.networkHash else {
            otherNetworks.insert(parsed.node)
            if let previous {
                resolved[key] = nil
                recompute(previous.txt.node)
            }
            publishSnapshot()
            return
        }
        var buffer = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
        avahi_address_snprint(&buffer, buffer.count, address)
        var host = Self.string(buffer)
        let isIPv4 = address.pointee.proto == AvahiProtocol(AVAHI_PROTO_INET)
        if !isIPv4, host.lowercased().hasPrefix("fe80:"), key.interface >= 0 {
            // Link-local IPv6 needs its interface to be dialled.
            var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
            if if_indextoname(UInt32(key.interface), &name) != nil { host += "%" + Self.string(name) }
        }
        resolved[key] = ResolvedService(txt: parsed, name: key.name, host: host, port: port, isIPv4: isIPv4)
        seen.insert(parsed.node)
        if let previous, previous.txt.node != parsed.node { recompute(previous.txt.node) }
        recompute(parsed.node)
    }

    /// Announces a peer's best address, or its removal, when that changed (lock held).
    private func recompute(_ node: AuthorID) {
        let services = resolved.filter { $0.value.txt.node == node }
        if let best = preferred(services.values) {
            if !best.isIPv4, announced[node] == nil {
                // Only IPv6 so far. Avahi browses each family on its own, so the same service's IPv4 answer may
                // not even be browsed yet: wait a little for it (`run` calls again once the deadline has passed),
                // rather than dial IPv6 and switch. A peer with IPv6 alone is announced a second later.
                let deadline = deferred[node] ?? .now + .seconds(1)
                deferred[node] = deadline
                if ContinuousClock.now < deadline { return }
            }
            deferred[node] = nil
            let peer = DiscoveredPeer(
                node: node,
                name: best.name,
                host: best.host,
                port: best.port,
                protocolVersion: best.txt.protocolVersion,
                openGroups: best.txt.openGroups
            )
            if announced[node] != peer {
                announced[node] = peer
                continuation.yield(.found(peer))
            }
        } else {
            deferred[node] = nil
            if announced.removeValue(forKey: node) != nil { continuation.yield(.removed(node)) }
        }
        publishSnapshot()
    }

    // MARK: Helpers

    private func publishSnapshot() {
        let (seen, present, others) = (seen.count, announced.count, otherNetworks.count)
        let open = announced.values.sorted { $0.node < $1.node }.flatMap { peer in
            peer.openGroups.map { NearbyOpenGroup(group: $0, node: peer.node, host: peer.host, port: peer.port) }
        }
        snapshot.withLock {
            $0.peersSeen = seen
            $0.peersPresent = present
            $0.otherNetworksSeen = others
            $0.openGroups = open
        }
    }

    /// Records why discovery is off; logs one line on the way from on (or starting) to unavailable.
    private func unavailable(_ reason: String) {
        let changed = snapshot.withLock { status in
            defer {
                status.state = .unavailable
                status.lastError = reason
            }
            return status.state != .unavailable
        }
        if changed {
            logger.warning(
                "LAN discovery is off: \(reason). Peers given with --peer HOST:PORT still work; retrying in the background."
            )
        } else {
            logger.debug("LAN discovery still unavailable", metadata: ["reason": "\(reason)"])
        }
    }

    /// `avahi_strerror`, with what it means here.
    static func describe(_ code: Int32) -> String {
        switch Int(code) {
        case AVAHI_ERR_NO_DAEMON: "avahi-daemon not running (\(message(code)))"
        case AVAHI_ERR_DISCONNECTED: "lost the connection to avahi-daemon (\(message(code)))"
        default: "avahi-client failed (\(message(code)))"
        }
    }

    /// The text of a NUL-terminated C buffer.
    private static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func message(_ code: Int32) -> String { String(cString: avahi_strerror(code)) }

    private static func alternative(to name: String) -> String {
        guard let next = avahi_alternative_service_name(name) else { return name + " #2" }
        defer { avahi_free(next) }
        return String(cString: next)
    }

    /// A TXT list's entries, as text (Avahi hands them back in reverse order; order does not matter here).
    private static func entries(_ list: UnsafeMutablePointer<AvahiStringList>?) -> [String] {
        var entries: [String] = []
        var node = list
        while let current = node, entries.count < 64 {
            let size = avahi_string_list_get_size(current)
            if let text = avahi_string_list_get_text(current) {
                entries.append(String(decoding: UnsafeBufferPointer(start: text, count: size), as: UTF8.self))
            }
            node = avahi_string_list_get_next(current)
        }
        return entries
    }

    private func locked(_ body: () -> Void) {
        guard let poll else { return }
        avahi_threaded_poll_lock(poll)
        defer { avahi_threaded_poll_unlock(poll) }
        body()
    }
}

/// One service as the browser reports it: the same peer can appear per interface and address family.
struct ServiceKey: Hashable, Sendable {
    let interface: AvahiIfIndex
    let proto: AvahiProtocol
    let name: String
    let type: String
    let domain: String

    init(
        interface: AvahiIfIndex,
        proto: AvahiProtocol,
        name: UnsafePointer<CChar>?,
        type: UnsafePointer<CChar>?,
        domain: UnsafePointer<CChar>?
    ) {
        self.interface = interface
        self.proto = proto
        self.name = name.map { String(cString: $0) } ?? ""
        self.type = type.map { String(cString: $0) } ?? ""
        self.domain = domain.map { String(cString: $0) } ?? ""
    }
}
