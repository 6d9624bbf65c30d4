import ContinuumCore
import ContinuumDiscovery
import ContinuumNode
import ContinuumStore
import ContinuumSync
import Foundation
import Hummingbird
import NIOCore
import ServiceLifecycle

/// The node itself: its OpenAPI document, status, peers and live events (Docs/API.md, "Routes").
struct NodeRoutes: Sendable {
    let store: ContinuumStore
    let identity: NodeIdentity
    let engine: SyncEngine
    let discovery: @Sendable () -> DiscoveryStatus
    /// The sync port's addresses, as `host:port`.
    let listening: @Sendable () -> [String]
    /// The data directory's path; nil where there is none.
    let dataDirectory: String?
    /// The address the API is bound to (`host:port`, the real port when 0 was asked for).
    let address: @Sendable () -> String
    /// For a request served with a linked browser's session: a check that it still stands (not ended, its device not
    /// removed), which an event stream makes at each event and keep-alive; nil for the owner's requests.
    var stillServed: @Sendable (Request) async -> (@Sendable () async -> Bool)? = { _ in nil }
    /// The group a guest's request sees (``GuestScope``); nil for everyone else.
    var guestGroup: @Sendable (Request) async -> GroupID? = { _ in nil }

    /// Adds the node's routes to `api` (the `/api` group).
    func register(on api: RouterGroup<BasicRequestContext>) {
        api.get("openapi.json") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-cache"],
                body: .init(byteBuffer: ByteBuffer(bytes: try APIServer.openAPIDocument()))
            )
        }
        api.get("status") { _, _ in try await status() }
        api.get("peers") { _, _ in try await peers() }
        api.get("events") { request, _ in try await events(request) }
    }

    struct Status: Encodable {
        let node: String
        let name: String?
        /// `0.3.0 (protocol 3)`, as `--version` prints it.
        let version: String
        /// Photos larger than this are not fetched by themselves (`--max-photo-mb`): `POST /api/photos/{sha256}/fetch`.
        let maxPhotoBytes: UInt64
        /// Where this node keeps its data; null where it has no data directory.
        @Nullable var dataDirectory: String?
        let listening: [String]
        let api: String
        let peers: Peers
        let records: Int
        let posts: Int
        let comments: Int
        /// Photo files held that a live post shows, and their bytes.
        let photos: Int
        let photoBytes: Int64
        let following: Int
        let unreadNotifications: Int
        /// The groups this node belongs to, and the requests to join that wait for an admin here.
        let groups: Int
        let pendingRequests: Int
        let discovery: DiscoveryJSON

        struct Peers: Encodable {
            let connected: Int
            let known: Int
        }
    }

    /// `GET /api/status`.
    func status() async throws -> Response {
        let counts = try await store.counts()
        let known = try await store.peers().count
        let connected = await engine.connectedPeers().count
        return try json(
            Status(
                node: identity.author.hex,
                name: try await store.displayName(of: identity.author),
                version: NodeVersion.description,
                maxPhotoBytes: engine.maxPhotoBytes,
                dataDirectory: dataDirectory,
                listening: listening(),
                api: address(),
                peers: .init(connected: connected, known: known),
                records: counts.records,
                posts: counts.posts,
                comments: counts.comments,
                photos: counts.photos,
                photoBytes: counts.photoBytes,
                following: try await store.followedPosts().count,
                unreadNotifications: try await store.unreadNotificationCount(),
                groups: try await store.groups().count,
                pendingRequests: try await store.joinRequests().count,
                discovery: DiscoveryJSON(discovery())
            )
        )
    }

    struct PeerList: Encodable {
        let peers: [PeerJSON]
        let discovery: DiscoveryJSON
    }

    /// `GET /api/peers`.
    func peers() async throws -> Response {
        let connected = Set(await engine.connectedPeers())
        let interest = await engine.peerInterest()
        // The store first: a session that ends between the two reads is then counted once (live), not twice.
        let stored = try await store.peers()
        let traffic = await engine.liveTraffic()
        let lines = stored.map {
            PeerJSON(
                $0.adding(traffic[$0.id].map(LiveTraffic.init)),
                connected: connected.contains($0.id),
                pushInterest: interest[$0.id]
            )
        }
        return try json(PeerList(peers: lines, discovery: DiscoveryJSON(discovery())))
    }

    /// Whether a guest of `group` hears `event`: the posts, comments, edits, deletes and reactions of its group's
    /// logs, and the photos and thumbnails its group shows; nothing of the node's peers, syncs or requests.
    static func shows(_ event: SyncEvent, toGuestOf group: GroupID, _ store: ContinuumStore) async -> Bool {
        do {
            switch event {
            case .postAdded(_, let author, _), .commentAdded(_, _, let author, _), .postEdited(_, let author, _),
                .deleted(_, let author), .reacted(_, _, let author, _):
                return try await store.group(ofLog: author) == group
            case .photoArrived(let hash), .thumbnailArrived(let hash):
                return try await store.isPhotoShown(hash, inGroups: [group])
            default:
                return false
            }
        } catch {
            // A store that cannot say: the guest does not hear of it (the page reads its group again on its next load).
            return false
        }
    }

    /// `GET /api/events`: Server-Sent Events, one per `watch` event, with a keep-alive comment every 15 s.
    func events(_ request: Request) async throws -> Response {
        let progress = try flag(request.formQuery, "progress")
        let events = await engine.events()
        let check = await stillServed(request)
        let scope = await guestGroup(request)
        let headers: HTTPFields = [.contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-store"]
        return Response(
            status: .ok,
            headers: headers,
            body: ResponseBody { writer in
                let (lines, continuation) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingNewest(4096))
                let pump = Task {
                    for await event in events {
                        if WatchEvent(event).isFrequent && !progress { continue }
                        // A browser whose session ended, or whose device was removed, hears nothing more.
                        if let check, await !check() { break }
                        if let scope, await !Self.shows(event, toGuestOf: scope, store) { continue }
                        let watch = await WatchEvent.named(event) { await store.nameForWatch($0) }
                        // Not storage nor the network: encoding an event of strings and numbers. One that did not
                        // encode is left out, rather than ending every other event's stream.
                        guard let data = try? watch.jsonLine() else { continue }
                        continuation.yield("event: \(watch.type)\ndata: \(String(decoding: data, as: UTF8.self))\n\n")
                    }
                    continuation.finish()
                }
                let beat = Task {
                    while !Task.isCancelled {
                        try await Task.sleep(for: .seconds(15))
                        // Checked at each keep-alive too, so that a quiet stream ends within 15 s as well.
                        if let check, await !check() { break }
                        continuation.yield(": keep-alive\n\n")
                    }
                    continuation.finish()
                }
                defer {
                    pump.cancel()
                    beat.cancel()
                    continuation.finish()
                }
                try await writer.write(ByteBuffer(string: "retry: 2000\n: connected\n\n"))
                // An endless response: end it when the node shuts down, so that shutdown need not wait for it.
                try await withGracefulShutdownHandler {
                    for await line in lines {
                        try await writer.write(ByteBuffer(string: line))
                    }
                } onGracefulShutdown: {
                    continuation.finish()
                }
                try await writer.finish(nil)
            }
        )
    }
}

extension NodeRoutes {
    /// The node's routes over the parts of `services` they read.
    init(_ services: APIServices, address: @escaping @Sendable () -> String) {
        self.init(
            store: services.store,
            identity: services.identity,
            engine: services.engine,
            discovery: services.discovery,
            listening: services.listening,
            dataDirectory: services.dataDirectory,
            address: address
        )
    }
}
