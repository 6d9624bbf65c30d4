import ContinuumCore
import ContinuumDiscovery
import ContinuumMedia
import ContinuumNode
import ContinuumStore
import ContinuumSync
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle

/// Where and how the HTTP API listens.
public struct APIConfiguration: Sendable {
    public var host = "127.0.0.1"
    /// 0 picks a free port.
    public var port = 7421
    /// Required on every request when set; the node insists on one when `host` is not loopback.
    public var token: String?
    /// The largest photo an upload may carry.
    public var maxUploadBytes: Int64 = 50 * 1_048_576
    /// A connection that has not sent a request's complete headers this long after it opened, or after the first
    /// byte of its next request, is closed (``HeaderTimeoutHandler``).
    public var headerTimeout: Duration = .seconds(10)
    /// Serve over TLS with this certificate (`--api-tls`); nil: plain HTTP.
    public var tls: APICertificate?

    public init() {}

    /// `https` with a certificate, else `http`.
    public var scheme: String { tls == nil ? "http" : "https" }

    /// True for `127.0.0.1`, `::1`, `localhost` and the rest of 127/8.
    public var isLoopback: Bool { Self.isLoopback(host: host) }

    public static func isLoopback(host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return bare == "localhost" || bare == "::1" || bare.hasPrefix("127.")
    }
}

/// What the API reads and acts on: the node's parts.
public struct APIServices: Sendable {
    public var store: ContinuumStore
    public var identity: NodeIdentity
    public var engine: SyncEngine
    public var thumbnails: (any ThumbnailProviding)?
    /// Checks photos: `POST /api/photos/inspect` (the web UI shows the position found before posting).
    public var inspector: any PhotoInspecting
    /// Every write: posts, comments, edits, deletions, follows, notifications read.
    public var actions: NodeActions
    public var discovery: @Sendable () -> DiscoveryStatus
    /// The sync port's addresses, as `host:port`.
    public var listening: @Sendable () -> [String]
    /// The node's event loops, shared by the HTTP server (nil: Hummingbird's own).
    public var eventLoopGroup: (any EventLoopGroup)?
    /// Joins a group with an invite code (`POST /api/join`); nil where the node does not sync.
    public var join: (@Sendable (InviteCode) async throws -> GroupID)?
    /// Joins an open group announced on the LAN by its name (`POST /api/join` with a name); nil where the node does
    /// not sync.
    public var joinOpen: (@Sendable (String) async throws -> GroupID)?
    /// The data directory's path, for the Settings page (`GET /api/status`); nil where there is none.
    public var dataDirectory: String?
    /// Places by name and by position, offline (a post's `place`, `GET /api/places`).
    public var places = Gazetteer()

    public init(
        store: ContinuumStore,
        identity: NodeIdentity,
        engine: SyncEngine,
        thumbnails: (any ThumbnailProviding)?,
        inspector: any PhotoInspecting,
        discovery: @escaping @Sendable () -> DiscoveryStatus,
        eventLoopGroup: (any EventLoopGroup)? = nil,
        listening: @escaping @Sendable () -> [String]
    ) {
        self.store = store
        self.identity = identity
        self.engine = engine
        self.thumbnails = thumbnails
        self.inspector = inspector
        actions = NodeActions(
            store: store,
            engine: engine,
            inspector: inspector,
            thumbnails: thumbnails,
            thumbnailing: .inBackground
        )
        self.discovery = discovery
        self.eventLoopGroup = eventLoopGroup
        self.listening = listening
    }

    /// The parts of a running node; `inspector` checks uploads, `thumbnails` makes the grid's images.
    public init(node: Node, inspector: any PhotoInspecting, thumbnails: (any ThumbnailProviding)?) {
        self.init(
            store: node.store,
            identity: node.identity,
            engine: node.engine,
            thumbnails: thumbnails,
            inspector: inspector,
            discovery: { [weak node] in node?.discoveryStatus ?? DiscoveryStatus(state: .off) },
            eventLoopGroup: node.eventLoopGroup,
            listening: { [weak node] in
                (node?.listeningAddresses ?? []).map { address in
                    let host = address.ipAddress ?? "\(address)"
                    return "\(host.contains(":") ? "[\(host)]" : host):\(address.port ?? 0)"
                }
            }
        )
        join = { [weak node] code in
            guard let node else { throw JoinFailure(description: "the node is stopping") }
            return try await node.join(code)
        }
        joinOpen = { [weak node] name in
            guard let node else { throw JoinFailure(description: "the node is stopping") }
            return try await node.joinOpen(name)
        }
        dataDirectory = node.directory.path
    }
}

/// The HTTP API could not start: its address is taken or cannot be bound.
public struct APIStartError: Error, CustomStringConvertible {
    public let description: String
}

/// The local HTTP API and the web UI (Docs/API.md), served by Hummingbird: a `Service` that runs beside the
/// node in one service group, and stops with it.
public final class APIServer: Service, Sendable {
    public let configuration: APIConfiguration
    let services: APIServices
    let logger: Logger
    private let bound = NIOLockedValueBox<Int?>(nil)
    /// Linked browsers' sessions, shared by the access rules and the routes that open them.
    let sessions = BrowserSessions()
    /// Told the URL once the server listens.
    private let listening: @Sendable (String) -> Void

    /// `listening` is told the URL (``url``) once the server listens.
    public init(
        configuration: APIConfiguration,
        services: APIServices,
        logger: Logger,
        listening: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.configuration = configuration
        self.services = services
        self.logger = logger
        self.listening = listening
    }

    /// The port it listens on, once it listens.
    public var port: Int? { bound.withLockedValue { $0 } }

    /// The address it serves, once it listens: `http://127.0.0.1:7421/`.
    public var url: String? {
        bound.withLockedValue { port in
            port.map {
                "\(configuration.scheme)://\(configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host):\($0)/"
            }
        }
    }

    /// Serves until the service group shuts down. Throws ``APIStartError`` when the address cannot be bound.
    public func run() async throws {
        do {
            try await serve()
        } catch {
            guard url == nil else { throw error }
            // The system's words for a socket error ("Address already in use"), not NIO's call and descriptor.
            let reason = (error as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(error)"
            throw APIStartError(
                description: "cannot serve the HTTP API on \(configuration.host):\(configuration.port): \(reason); "
                    + "choose another --api-listen, or --no-api"
            )
        }
    }

    /// The folder of the web UI's static files. On Linux, Foundation takes a resource bundle that holds a `Resources`
    /// folder (ours does, for the OpenAPI document) for an old-style bundle, so `resourceURL` is that folder; `Web` is
    /// beside it, at the bundle's root. The first of the two places that has an `index.html` is used.
    public static var webRoot: URL? {
        [Bundle.module.resourceURL, Bundle.module.bundleURL]
            .compactMap { $0?.appendingPathComponent("Web") }
            .first { FileManager.default.fileExists(atPath: $0.appendingPathComponent("index.html").path) }
    }

    /// The OpenAPI document.
    public static func openAPIDocument() throws -> Data {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "json", subdirectory: "Resources")
        else { throw APIError(.internalServerError, "internal", "the OpenAPI document is missing from this build") }
        return try Data(contentsOf: url)
    }

    private func serve() async throws {
        let router = buildRouter()
        let headerTimeout = TimeAmount(configuration.headerTimeout)
        let logger = self.logger
        let http1 = HTTPServerBuilder.http1(
            configuration: .init(
                additionalChannelHandlers: [HeaderTimeoutHandler(timeout: headerTimeout, logger: logger)]
            )
        )
        let app = Application(
            router: router,
            server: try configuration.tls.map { try .tls(http1, tlsConfiguration: $0.serverConfiguration()) } ?? http1,
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port),
                serverName: "continuum-node"
            ),
            onServerRunning: { [self] channel in
                bound.withLockedValue { $0 = channel.localAddress?.port ?? configuration.port }
                if let url { listening(url) }
            },
            eventLoopGroupProvider: services.eventLoopGroup.map { .shared($0) } ?? .singleton,
            logger: logger
        )
        try await app.run()
    }

    /// The API's router: its middleware (errors as JSON, the access rules, the web UI's files) and every route, as
    /// ``run()`` serves them. Tests answer requests with its responder in-process, without a socket.
    public func buildRouter() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: ErrorMiddleware(logger: logger))
        let store = services.store
        // A linked browser's session stands while its device is a device of its account: judged at each request,
        // and at each event and keep-alive of an event stream.
        let stillDevice: @Sendable (BrowserSession) async throws -> Bool = { session in
            if session.group != nil { return try await store.guest(session.device)?.state == .active }
            return try await store.isDevice(session.device, of: session.account)
        }
        router.add(
            middleware: AccessMiddleware(
                token: configuration.token,
                scheme: configuration.scheme,
                sessions: sessions,
                stillDevice: stillDevice
            )
        )
        if let root = Self.webRoot {
            router.add(
                middleware: FileMiddleware(
                    root.path,
                    cacheControl: .init([(Hummingbird.MediaType(type: .any), [.noCache])]),
                    searchForIndexHtml: true,
                    logger: logger
                )
            )
        }
        // Every route, in sets by what they serve, under `/api`; each set holds only the parts of the node it uses.
        registerRoutes(on: router.group("api"), stillDevice: stillDevice)
        return router
    }
}

extension APIServer {
    /// Every route of the API under `api`, in sets by what they serve.
    private func registerRoutes(
        on api: RouterGroup<BasicRequestContext>,
        stillDevice: @escaping @Sendable (BrowserSession) async throws -> Bool
    ) {
        let address: @Sendable () -> String = { [bound, configuration] in
            "\(configuration.host):\(bound.withLockedValue { $0 } ?? configuration.port)"
        }
        let uploads = UploadReceiver(assets: services.store.assets, limit: .upload(configuration))
        var nodeRoutes = NodeRoutes(services, address: address)
        nodeRoutes.stillServed = Self.stillServed(by: sessions, stillDevice: stillDevice)
        let scope = GuestScope(sessions: sessions)
        nodeRoutes.guestGroup = { request in await scope.group(of: request) }
        nodeRoutes.register(on: api)
        var postRoutes = PostRoutes(services, uploads: uploads)
        postRoutes.scope = scope
        postRoutes.register(on: api)
        FollowRoutes(services).register(on: api)
        ReactionRoutes(services).register(on: api)
        var photoRoutes = PhotoRoutes(services, uploads: uploads)
        photoRoutes.scope = scope
        photoRoutes.register(on: api)
        DeviceRoutes(services).register(on: api)
        let browserRoutes = BrowserRoutes(services, sessions: sessions, uploads: uploads, configuration: configuration)
        {
            [bound, configuration] in
            bound.withLockedValue { $0 } ?? configuration.port
        }
        browserRoutes.register(on: api)
        var groupRoutes = GroupRoutes(services)
        groupRoutes.pageURL = { request in browserRoutes.pageURL(request) }
        groupRoutes.register(on: api)
        GuestRoutes(browser: browserRoutes).register(on: api)
        SettingsRoutes(services, configuration: configuration, address: address).register(on: api)
    }
}

extension APIServer {
    /// For an event stream: nil when its request is the owner's; for a linked browser's, a check that its session
    /// still stands and its device is still a device of its account.
    static func stillServed(
        by sessions: BrowserSessions,
        stillDevice: @escaping @Sendable (BrowserSession) async throws -> Bool
    ) -> @Sendable (Request) async -> (@Sendable () async -> Bool)? {
        { request in
            guard let token = BrowserSessions.token(of: request), let session = await sessions.session(token) else {
                return nil
            }
            return {
                guard await sessions.session(token) != nil else { return false }
                do {
                    return try await stillDevice(session)
                } catch {
                    // A store that cannot say: the stream ends (the page reconnects, and its request is judged anew).
                    return false
                }
            }
        }
    }
}

/// Turns every failure into the API's JSON error body; logs the unexpected ones.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let logger: Logger

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            throw error
        } catch let error as StoreError {
            throw APIError.from(error)
        } catch let error as HTTPError {
            switch error.status {
            case .notFound: throw APIError(.notFound, "not_found", "no such page or route: \(request.uri.path)")
            case .methodNotAllowed, .notImplemented:
                throw APIError(
                    .methodNotAllowed,
                    "method_not_allowed",
                    "\(request.method) is not allowed on \(request.uri.path)"
                )
            case .contentTooLarge:
                throw BodyLimit.framework(context.maxUploadSize).error
            case .badRequest:
                throw APIError(
                    .badRequest,
                    "bad_request",
                    "the JSON body was not understood: \(error.body ?? "malformed"); see /api/openapi.json"
                )
            default:
                throw APIError(error.status, "bad_request", error.body ?? "the request was not understood")
            }
        } catch is NIOTooManyBytesError {
            // A body read past Hummingbird's own limit by code that does not read it through a BodyLimit.
            throw BodyLimit.framework(context.maxUploadSize).error
        } catch is DecodingError {
            throw APIError.badRequest("the body is not the JSON this route takes; see /api/openapi.json")
        } catch {
            logger.error("API request failed", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            throw APIError(.internalServerError, "internal", "the node failed to answer: \(error)")
        }
    }
}
