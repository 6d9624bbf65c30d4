import ContinuumCore
import ContinuumDiscovery
import ContinuumMedia
import ContinuumStore
import ContinuumSync
import ContinuumWire
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ServiceLifecycle

/// How to run a node.
public struct NodeConfiguration: Sendable {
    public var listenHost = "0.0.0.0"
    /// 0 picks a free port.
    public var port = 7420
    public var peers: [PeerAddress] = []
    /// Peers known by id (`--peer ID@HOST:PORT`): dialled as the overlay says (``OverlayDialer``), like discovered ones.
    public var knownPeers: [(node: AuthorID, address: PeerAddress)] = []
    /// Dial the peers remembered from earlier sessions.
    public var dialRemembered = true
    public var sync = SyncConfiguration()
    /// Network groups to be in (`--network NAME`, `--network-key FILE`): joined at start.
    public var networks: [(id: GroupID, name: String)] = []
    /// The network hash published in the LAN announcement (PROTOCOL.md §9.2): nodes dial only services of the same.
    public var discoveryNetwork: NetworkID = .default
    /// Join the first open group discovered on the LAN while this node is in no group (`run --join-open`).
    public var joinOpen = false
    /// Found the node's account at start when it has none; off for a node about to be linked into one (`init
    /// --link`), whose account log must begin with its joining record.
    public var foundsAccount = true

    public init() {}
}

/// A node: the store, the sync engine and network, the control socket, LAN discovery.
///
/// ``start()`` binds the sync port and the control socket; ``services()`` are then run in one service group with
/// the HTTP API, until SIGINT or SIGTERM; ``close()`` closes the store after it.
public final class Node: Sendable {
    public let directory: DataDirectory
    public let store: ContinuumStore
    public let identity: NodeIdentity
    public let engine: SyncEngine
    /// Thumbnails of the photos of posts, for the sync engine and the HTTP API.
    public let thumbnails: ThumbnailService
    let network: SyncNetwork
    let configuration: NodeConfiguration
    private let group: MultiThreadedEventLoopGroup
    let logger: Logger
    private let lock: DataDirectoryLock
    private let bound: NIOLockedValueBox<[SocketAddress]>
    /// LAN discovery (nil: off); its peers are dialled by the ``OverlayDialer``.
    let discovery: (any PeerDiscovery)?

    /// Takes the data directory's lock and opens everything; nothing listens until ``start()``.
    /// `discovery`: how to find peers on the LAN and be found (nil: only configured and remembered peers).
    public init(
        directory: DataDirectory,
        configuration: NodeConfiguration,
        logger: Logger,
        discovery: (any PeerDiscovery)? = nil
    ) throws {
        self.discovery = discovery
        self.directory = directory
        try directory.create()
        lock = try DataDirectoryLock(directory)
        store = try ContinuumStore.open(directory, logger: logger)
        identity = try IdentityFile.loadOrCreate(at: directory.identityURL).0
        self.configuration = configuration
        self.logger = logger
        // One event loop per core (at most 4): a peer whose frames are costly to decrypt and decode delays only the
        // sessions on its own loop, not every session.
        group = MultiThreadedEventLoopGroup(numberOfThreads: min(4, max(1, System.coreCount)))
        thumbnails = ThumbnailService(store: store, logger: logger)
        engine = SyncEngine(
            store: NodeSyncStorage(
                store: store,
                identity: identity,
                policy: NotificationPolicy(me: identity.author, newPosts: configuration.sync.notifyNewPosts)
            ),
            identity: identity,
            configuration: configuration.sync,
            logger: logger,
            thumbnails: thumbnails
        )
        network = try SyncNetwork(engine: engine, identity: identity, group: group, logger: logger)
        bound = NIOLockedValueBox([])
    }

    /// The event loops of the node's sockets, for the HTTP API to share.
    public var eventLoopGroup: any EventLoopGroup { group }

    /// LAN discovery's state, for `status`.
    public var discoveryStatus: DiscoveryStatus { discovery?.status() ?? DiscoveryStatus(state: .off) }

    /// The addresses the sync port is bound to, once ``start()`` has bound it.
    public var listeningAddresses: [SocketAddress] { bound.withLockedValue { $0 } }

    /// What ``start()`` bound: the sync port's server, the control socket's, and the peers to dial.
    private struct Started: Sendable {
        let server: NIOAsyncChannel<WireChannel, Never>
        let control: ControlServer
        let controlChannel: NIOAsyncChannel<ControlServer.LineChannel, Never>
        let peers: [PeerAddress]
        /// Peers known by id (configured, remembered), for the overlay.
        let known: [(node: AuthorID, address: PeerAddress)]
    }

    private let started = NIOLockedValueBox<Started?>(nil)
    /// Whether `--join-open` is joining an open group now (peers found together are taken one at a time).
    let openJoin = NIOLockedValueBox(false)

    /// Joins by invite asked of this node (``join(_:)``), for the part that dials them.
    private let joins = AsyncStream<(PeerAddress, JoinAttempt)>.makeStream()

    /// Joins a group with an invite code: dials the inviter at the code's address, proves the invite and waits for
    /// the inviter to accept (at most `timeout`). The group's history then comes by sync. Throws ``JoinFailure``.
    public func join(_ code: InviteCode, timeout: Duration = .seconds(20)) async throws -> GroupID {
        guard !code.isLink else {
            throw JoinFailure(
                description:
                    "this is a link code, from 'device link': on a new device, run 'continuum-node init --link CODE'"
            )
        }
        guard let host = code.host, let port = code.port else {
            throw JoinFailure(description: "the invite code carries no address of the inviter")
        }
        let log = try await store.beginJoin(by: identity, for: InviteTicket.id(of: code.secret))
        guard let logKey = try await store.ownLogIdentity(log, of: identity) else {
            throw JoinFailure(description: "the new log key for the join could not be read back")
        }
        let attempt = JoinAttempt(code: code, log: logKey)
        guard let group = try await outcome(of: attempt, at: PeerAddress(host: host, port: port), timeout: timeout)
        else {
            throw JoinFailure(description: "the inviter answered a join with a link")
        }
        return group
    }

    /// Links this node into the account of the device that made the link code (`device link`): it becomes a device
    /// of that account, and shares the account's groups with their history (PROTOCOL.md §7.8.19). The node's key
    /// must have signed nothing yet.
    public func link(_ code: InviteCode, timeout: Duration = .seconds(20)) async throws {
        guard code.isLink else {
            throw JoinFailure(description: "this is an invite to a group: run 'continuum-node join CODE'")
        }
        guard let host = code.host, let port = code.port else {
            throw JoinFailure(description: "the link code carries no address of the device that made it")
        }
        let attempt = JoinAttempt(code: code, log: identity)
        _ = try await outcome(of: attempt, at: PeerAddress(host: host, port: port), timeout: timeout)
    }

    /// Dials `address` with `attempt` and waits for its outcome, at most `timeout`.
    func outcome(of attempt: JoinAttempt, at address: PeerAddress, timeout: Duration) async throws -> GroupID? {
        joins.continuation.yield((address, attempt))
        let outcome = await withTaskGroup(of: Result<GroupID?, JoinFailure>?.self) { group in
            group.addTask {
                for await result in attempt.outcome { return result }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                let who =
                    attempt.isLink
                    ? "the device that made the link code" : attempt.isRecovery ? "the node" : "the inviter"
                return .failure(
                    JoinFailure(description: "\(who) at \(address.host):\(address.port) did not answer in time")
                )
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        switch outcome {
        case .success(let group)?: return group
        case .failure(let failure)?: throw failure
        case nil: throw JoinFailure(description: "the join ended without an answer")
        }
    }

    /// Where a request to join stands, as ``ask(_:timeout:)`` reports it.
    public enum AskProgress: Sendable, Hashable {
        /// The peer recorded the request; an admin there must approve it (its message says how).
        case pending(String)
        case joined(GroupID)
        case failed(String)
    }

    /// Asks the node at `address` to let this node join one of its groups: the request is recorded there and waits
    /// for an admin (`requests`, `approve`, `deny`). Asks again every few seconds until an admin approves or denies
    /// it, or `timeout` passes (the request then stays there, and asking again later picks it up).
    public func ask(
        _ address: PeerAddress,
        node: AuthorID? = nil,
        timeout: Duration = .seconds(600)
    )
        -> AsyncStream<AskProgress>
    {
        let (stream, continuation) = AsyncStream<AskProgress>.makeStream()
        let task = Task {
            let last = await asking(address, node: node, timeout: timeout) { continuation.yield(.pending($0)) }
            continuation.yield(last)
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// The requests of ``ask(_:timeout:)``, until an answer: `pending` is told the first time the peer says the
    /// request waits.
    private func asking(
        _ address: PeerAddress,
        node: AuthorID?,
        timeout: Duration,
        pending: (String) -> Void
    ) async -> AskProgress {
        let logKey: NodeIdentity
        do {
            let log = try await store.beginJoin(by: identity, for: Data("ask \(address)".utf8))
            guard let key = try await store.ownLogIdentity(log, of: identity) else {
                return .failed("the new log key for the request could not be read back")
            }
            logKey = key
        } catch {
            return .failed("the store failed: \(error)")
        }
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var told = false
        while ContinuousClock.now < deadline, !Task.isCancelled {
            let attempt = JoinAttempt(asking: logKey, of: node)
            joins.continuation.yield((address, attempt))
            var outcome: Result<GroupID?, JoinFailure>?
            for await result in attempt.outcome { outcome = result }
            switch outcome {
            case .success(let group?)?:
                return .joined(group)
            case .success(nil)?:
                return .failed("the node answered a request to join with a link")
            case .failure(let failure)? where failure.pending:
                if !told { pending(failure.description) }
                told = true
                try? await Task.sleep(for: Self.askInterval)
            case .failure(let failure)?:
                return .failed(failure.description)
            case nil:
                return .failed("the request ended without an answer")
            }
        }
        return .failed(
            "no admin answered within \(timeout); the request stays on that node, and asking again picks it up"
        )
    }

    /// How often a waiting request to join asks again.
    static let askInterval = Duration.seconds(2)

    /// Binds the sync port and the control socket, and reads the peers to dial; returns the addresses the sync
    /// port is bound to (so that the caller can print them). Then ``services()`` are run, in one service group.
    public func start() async throws -> [SocketAddress] {
        // A data directory made by `run` alone, or by a build before accounts, gets its account now (without a
        // recovery code: only `init` shows one), unless its key signed other records first.
        if configuration.foundsAccount, try await store.foundAccount(by: identity, recovery: nil) == nil {
            logger.notice(
                "this node has no account: its key signed records before accounts existed (PROTOCOL.md Appendix A 33)"
            )
        }
        // Logs made before they were declared (a data directory of an earlier build) are declared now (§2.10).
        try await store.declareOwnLogs(by: identity)
        let server: NIOAsyncChannel<WireChannel, Never>
        do {
            server = try await network.bind(host: configuration.listenHost, port: configuration.port)
        } catch let error as IOError {
            throw StoreError(
                .io,
                "cannot listen on \(configuration.listenHost):\(configuration.port): "
                    + "\(String(cString: strerror(error.errnoCode))); choose another --port or --listen"
            )
        }
        if let address = server.channel.localAddress {
            bound.withLockedValue { $0 = [address] }
            if let port = address.port { await engine.setListenPort(UInt16(port)) }
        }
        do {
            try await store.resetPeerStates()
        } catch {
            // Only `peers` shows stale states until the sessions begin; the node itself does not read them.
            logger.error("resetting the peers' states failed", metadata: ["error": "\(error)"])
        }
        for network in configuration.networks {
            if try await store.joinNetwork(network.id, name: network.name, by: identity) {
                logger.notice(
                    "joined network group",
                    metadata: ["group": "\(network.id.short)", "name": "\(network.name)"]
                )
            }
        }
        let control = ControlServer(node: self, logger: logger)
        let controlChannel = try await control.bind(group: group)
        let (peers, known) = await peersToDial()
        started.withLockedValue {
            $0 = Started(server: server, control: control, controlChannel: controlChannel, peers: peers, known: known)
        }
        return listeningAddresses
    }

    /// `--peer HOST:PORT` addresses, each kept connected; and the peers known by id, for the overlay: `--peer
    /// ID@HOST:PORT`, then the remembered peers (unless `--no-remembered-peers`).
    private func peersToDial() async -> ([PeerAddress], [(node: AuthorID, address: PeerAddress)]) {
        var known = configuration.knownPeers
        guard configuration.dialRemembered else { return (configuration.peers, known) }
        let remembered: [PeerRecord]
        do {
            remembered = try await store.peers()
        } catch {
            logger.error("reading the remembered peers failed; dialling only --peer", metadata: ["error": "\(error)"])
            return (configuration.peers, known)
        }
        for peer in remembered where peer.port > 0 && !known.contains(where: { $0.node == peer.id }) {
            let address = PeerAddress(host: peer.host, port: peer.port)
            if !configuration.peers.contains(address) { known.append((peer.id, address)) }
        }
        return (configuration.peers, known)
    }

    /// The node's parts, as services for one service group, after ``start()``: the engine, the sync listener and
    /// its sessions, the dialers, the control socket, and LAN discovery. The group shuts them down in reverse
    /// order: discovery and the control socket first, then the sessions (each says goodbye), the engine last.
    public func services() -> [any Service] {
        guard let started = started.withLockedValue({ $0 }) else {
            preconditionFailure("Node.services() before Node.start()")
        }
        var services: [any Service] = [
            NodePart("engine") { await self.engine.run() },
            NodePart(
                "sync listener",
                body: { await self.network.serve(started.server) },
                stop: { started.server.channel.close(promise: nil) }
            ),
        ]
        for address in started.peers {
            services.append(NodePart("dialer \(address)") { await self.network.maintain(address) })
        }
        let overlay = makeOverlay()
        services.append(joinsPart(overlay))
        services.append(
            NodePart(
                "control socket",
                body: { await started.control.serve(started.controlChannel) },
                stop: { started.controlChannel.channel.close(promise: nil) }
            )
        )
        services.append(overlayPart(overlay, pinned: started.known))
        if let discovery { services += discoveryParts(discovery) }
        return services
    }

    /// The part that dials the joins asked of this node (``join(_:)``), each in a task of its own.
    private func joinsPart(_ overlay: OverlayDialer) -> NodePart {
        NodePart("joins") {
            await withDiscardingTaskGroup { group in
                for await (address, attempt) in self.joins.stream {
                    group.addTask {
                        // The session that joins goes on as any other; then the node joined through is a peer known
                        // by id, dialled while it is a neighbour in the overlay (not kept connected whatever the
                        // bound: a full inviter would refuse every joiner's redial as busy).
                        let (_, peer) = await self.network.connect(
                            to: address,
                            expected: attempt.expected,
                            join: attempt
                        )
                        // A join that failed leaves no dialler, but keeps its log key: tried again (the same invite,
                        // the same node asked), it proves the same key, so that an answer lost on the way is not lost
                        // for good.
                        if attempt.succeeded, let peer { await overlay.add(pinned: [(node: peer, address: address)]) }
                    }
                }
            }
        }
    }

    /// The dialler of the overlay: the peers known by id, dialled while they are neighbours.
    private func makeOverlay() -> OverlayDialer {
        OverlayDialer(
            network: network,
            own: identity.author,
            maxPeers: configuration.sync.maxPeers,
            logger: logger
        ) { [weak self] peer in
            await self?.found(peer)
        }
    }

    /// The part that keeps the overlay connected: the peers known by id (`pinned`), then those LAN discovery finds.
    private func overlayPart(_ overlay: OverlayDialer, pinned: [(node: AuthorID, address: PeerAddress)]) -> NodePart {
        NodePart("overlay") {
            await overlay.add(pinned: pinned)
            await overlay.run(discovery: self.discovery?.events)
        }
    }

    /// The parts that use LAN discovery: one advertises this node and browses for peers, one announces the open
    /// groups.
    private func discoveryParts(_ discovery: any PeerDiscovery) -> [NodePart] {
        let advertisement = ServiceAdvertisement(
            name: configuration.sync.name ?? "continuum \(identity.author.short)",
            port: UInt16(listeningAddresses.first?.port ?? configuration.port),
            node: identity.author,
            protocolVersion: WireLimits.protocolVersion,
            networkHash: configuration.discoveryNetwork.advertisedHash
        )
        return [
            NodePart("discovery") { await discovery.run(advertising: advertisement) },
            NodePart("open groups") { await self.announceOpenGroups(discovery) },
        ]
    }

    /// After the service group has ended: removes the control socket, closes the store, stops the event loops.
    public func close() async {
        // The socket file may already be gone (removed by hand); nothing depends on its removal.
        try? FileManager.default.removeItem(at: ControlServer.socketURL(directory))
        do {
            await store.finishPendingErasures()
            try store.close()
        } catch {
            logger.error("closing the store failed", metadata: ["error": "\(error)"])
        }
        do {
            try await group.shutdownGracefully()
        } catch {
            logger.error("stopping the event loops failed", metadata: ["error": "\(error)"])
        }
    }
}

/// One part of the node as a `Service`: runs until the part ends by itself or the group shuts down, which first
/// calls `stop` (a listener closes its socket, so that no new connection comes) and then cancels the part (its
/// sessions end with ERROR *shutting down*).
struct NodePart: Service {
    let name: String
    let stop: @Sendable () -> Void
    let body: @Sendable () async -> Void

    init(
        _ name: String,
        body: @escaping @Sendable () async -> Void,
        stop: @escaping @Sendable () -> Void = {}
    ) {
        self.name = name
        self.stop = stop
        self.body = body
    }

    func run() async throws {
        await withGracefulShutdownHandler {
            await cancelWhenGracefulShutdown { await body() }
        } onGracefulShutdown: {
            stop()
        }
        // A part that ended by itself (the discovery dialer, once discovery stops before it) waits for the group's
        // end: returning early would end the whole group as a failure. Cancellation ends the wait just as well.
        try? await gracefulShutdown()
    }
}
