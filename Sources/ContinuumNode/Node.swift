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
    /// Dial the peers remembered from earlier sessions.
    public var dialRemembered = true
    public var sync = SyncConfiguration()

    public init() {}
}

/// A running node: the store, the sync engine and network, the control socket, as one `Service`.
///
/// `run()` binds the sync port, dials peers, and serves until the service group is shut down (SIGINT or
/// SIGTERM); then it closes every connection and the store.
public final class Node: Service, Sendable {
    public let directory: DataDirectory
    public let store: ContinuumStore
    public let identity: NodeIdentity
    public let engine: SyncEngine
    /// Thumbnails of the photos of posts, for the sync engine and the HTTP API.
    public let thumbnails: ThumbnailService
    private let network: SyncNetwork
    private let configuration: NodeConfiguration
    private let group: MultiThreadedEventLoopGroup
    private let logger: Logger
    private let lock: DataDirectoryLock
    private let bound: NIOLockedValueBox<[SocketAddress]>
    /// LAN discovery (nil: off); its peers are dialled by a ``DiscoveryDialer``.
    private let discovery: (any PeerDiscovery)?

    /// Takes the data directory's lock and opens everything; nothing listens until `run()`.
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

    /// LAN discovery's state, for `status`.
    public var discoveryStatus: DiscoveryStatus { discovery?.status() ?? DiscoveryStatus(state: .off) }

    /// The addresses the sync port is bound to, once `run()` has bound it.
    public var listeningAddresses: [SocketAddress] { bound.withLockedValue { $0 } }

    /// Binds the sync port (so that the caller can print it) and returns the server to hand to `run`.
    public func run() async throws {
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
        var addresses = configuration.peers
        if configuration.dialRemembered {
            let remembered: [PeerRecord]
            do {
                remembered = try await store.peers()
            } catch {
                logger.error(
                    "reading the remembered peers failed; dialling only --peer",
                    metadata: ["error": "\(error)"]
                )
                remembered = []
            }
            for peer in remembered where peer.port > 0 {
                let address = PeerAddress(host: peer.host, port: peer.port)
                if !addresses.contains(address) { addresses.append(address) }
            }
        }
        let control = ControlServer(node: self, logger: logger)
        let controlChannel = try await control.bind(group: group)
        await withDiscardingTaskGroup { tasks in
            tasks.addTask { await self.engine.run() }
            tasks.addTask { await self.network.serve(server) }
            tasks.addTask { await control.serve(controlChannel) }
            for address in addresses {
                tasks.addTask { await self.network.maintain(address) }
            }
            if let discovery {
                let advertisement = ServiceAdvertisement(
                    name: configuration.sync.name ?? "continuum \(identity.author.short)",
                    port: UInt16(listeningAddresses.first?.port ?? configuration.port),
                    node: identity.author,
                    protocolVersion: WireLimits.protocolVersion,
                    networkHash: configuration.sync.network.advertisedHash
                )
                let dialer = DiscoveryDialer(network: network, own: identity.author, logger: logger)
                tasks.addTask { await discovery.run(advertising: advertisement) }
                tasks.addTask { await dialer.run(discovery.events) }
            }
            // Until graceful shutdown (SIGINT, SIGTERM) or cancellation: it returns at the one and throws
            // CancellationError at the other, and both end the node the same way.
            try? await gracefulShutdown()
            // Stop listening, then end every session and loop. A channel already closed refuses a second close,
            // which is fine.
            try? await server.channel.close()
            try? await controlChannel.channel.close()
            tasks.cancelAll()
        }
        // The socket file may already be gone (removed by hand); nothing depends on its removal.
        try? FileManager.default.removeItem(at: ControlServer.socketURL(directory))
        do {
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
