import ContinuumCore
import ContinuumDiscovery
import ContinuumHTTP
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
    /// The local HTTP API and web UI; nil: not served.
    public var api: APIConfiguration? = APIConfiguration()

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
    private let network: SyncNetwork
    private let configuration: NodeConfiguration
    private let group: MultiThreadedEventLoopGroup
    private let logger: Logger
    private let lock: DataDirectoryLock
    private let bound: NIOLockedValueBox<[SocketAddress]>
    /// LAN discovery (nil: off); its peers are dialled by a ``DiscoveryDialer``.
    private let discovery: (any PeerDiscovery)?
    /// The HTTP API's bound address (`host`, `port`), once it listens.
    private let apiBound: NIOLockedValueBox<(String, Int)?>
    /// Why the HTTP API stopped, if it failed (the node then stops too).
    private let apiFailure: NIOLockedValueBox<(any Error)?>
    /// Thumbnails for the HTTP API (nil: none are made).
    public let thumbnails: (any ThumbnailProviding)?
    /// How uploaded photos are checked.
    public let inspector: any PhotoInspecting

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
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        engine = SyncEngine(store: store, identity: identity, configuration: configuration.sync, logger: logger)
        network = try SyncNetwork(engine: engine, identity: identity, group: group, logger: logger)
        bound = NIOLockedValueBox([])
        apiBound = NIOLockedValueBox(nil)
        apiFailure = NIOLockedValueBox(nil)
        thumbnails = nil
        inspector = HeaderInspector()
    }

    /// The HTTP API's address once it listens: `http://127.0.0.1:7421/`.
    public var apiURL: String? {
        apiBound.withLockedValue { bound in
            bound.map { host, port in "http://\(host.contains(":") ? "[\(host)]" : host):\(port)/" }
        }
    }

    /// Why the HTTP API could not serve, when it failed.
    public var apiError: (any Error)? { apiFailure.withLockedValue { $0 } }

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
        try? await store.resetPeerStates()
        var addresses = configuration.peers
        if configuration.dialRemembered {
            for peer in (try? await store.peers()) ?? [] where peer.port > 0 {
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
            if let api = configuration.api {
                let server = APIServer(configuration: api, services: apiServices(), logger: logger)
                tasks.addTask {
                    do {
                        try await server.run { host, port in self.apiBound.withLockedValue { $0 = (host, port) } }
                    } catch {
                        if !Task.isCancelled {
                            self.logger.error("the HTTP API stopped", metadata: ["error": "\(error)"])
                            self.apiFailure.withLockedValue { $0 = error }
                        }
                    }
                }
            }
            tasks.addTask {
                try? await gracefulShutdown()
                // Shutting down: stop listening, close sessions; the group's tasks then end.
                try? await server.channel.close()
                try? await controlChannel.channel.close()
            }
            await withTaskCancellationOrGracefulShutdownHandler {
                await self.waitForever()
            } onCancelOrGracefulShutdown: {
            }
            tasks.cancelAll()
        }
        try? FileManager.default.removeItem(at: ControlServer.socketURL(directory))
        try? store.close()
        try? await group.shutdownGracefully()
        if let error = apiError, let api = configuration.api {
            throw StoreError(
                .io,
                "cannot serve the HTTP API on \(api.host):\(api.port): \(error); "
                    + "choose another --api-listen, or --no-api"
            )
        }
    }

    private func apiServices() -> APIServices {
        APIServices(
            store: store,
            identity: identity,
            engine: engine,
            thumbnails: thumbnails,
            inspector: inspector,
            discovery: { [weak self] in self?.discoveryStatus ?? DiscoveryStatus(state: .off) },
            listening: { [weak self] in
                (self?.listeningAddresses ?? []).map { address in
                    let host = address.ipAddress ?? "\(address)"
                    return "\(host.contains(":") ? "[\(host)]" : host):\(address.port ?? 0)"
                }
            }
        )
    }

    private func waitForever() async {
        while !Task.isCancelled && !Task.isShuttingDownGracefully && apiError == nil {
            try? await Task.sleep(for: .milliseconds(100))
        }
    }
}
